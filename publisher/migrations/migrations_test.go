package migrations_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/lib/pq"

	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/migrations"
)

// The classifier's role (the harness's `classifier`, to which migration 002
// grants) may INSERT into classified_outbox, including the classifier's
// ON CONFLICT DO NOTHING, and may not read, update or delete rows.
func TestClassifierRoleMayOnlyInsert(t *testing.T) {
	t.Parallel()
	admin, dsn := outboxtest.Database(t)
	var exists bool
	if err := admin.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier')`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		testenv.Unavailable(t, "postgres role classifier", errors.New("role classifier does not exist (scripts/services.sh up creates it)"))
	}
	db, err := sql.Open("postgres", testenv.WithUser(t, dsn, "classifier", "classifier"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	insert := `INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url)
		VALUES ('c-1', 's', 's_classified_content', 'article', 50, 't', 'u') ON CONFLICT DO NOTHING`
	for range 2 { // the second insert is the classifier's re-insertion: a no-op
		if _, err := db.Exec(insert); err != nil {
			t.Fatalf("classifier insert: %v", err)
		}
	}
	var n int
	if err := admin.QueryRow(`SELECT COUNT(*) FROM classified_outbox`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after two inserts: %d %v", n, err)
	}
	for _, q := range []string{
		`SELECT * FROM classified_outbox`,
		`SELECT COUNT(*) FROM classified_outbox`,
		`UPDATE classified_outbox SET status = 'published'`,
		`DELETE FROM classified_outbox`,
		`TRUNCATE classified_outbox`,
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url)
			VALUES ('c-2', 's', 'i', 'article', 50, 't', 'u') RETURNING id`,
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url)
			VALUES ('c-1', 's', 'i', 'article', 50, 't', 'u') ON CONFLICT (index_name, content_id, version) DO UPDATE SET title = 'x'`,
	} {
		_, err := db.Exec(q)
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
			t.Errorf("%s: got %v, want permission denied (42501)", q, err)
		}
	}
	var title, status string
	if err := admin.QueryRow(`SELECT title, status FROM classified_outbox`).Scan(&title, &status); err != nil || title != "t" || status != "pending" {
		t.Errorf("row changed: %s %s %v", title, status, err)
	}

	// Migration 006: only pending rows with no claim or retry state. Each
	// column the publisher owns is refused, whatever its value.
	for _, q := range []string{
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url, status)
			VALUES ('c-3', 's', 'i', 'article', 50, 't', 'u', 'published')`,
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url, status)
			VALUES ('c-3', 's', 'i', 'article', 50, 't', 'u', 'pending')`,
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url, claim_token)
			VALUES ('c-3', 's', 'i', 'article', 50, 't', 'u', gen_random_uuid())`,
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url, retry_count)
			VALUES ('c-3', 's', 'i', 'article', 50, 't', 'u', 5)`,
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url, next_retry_at)
			VALUES ('c-3', 's', 'i', 'article', 50, 't', 'u', NOW())`,
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url, published_at)
			VALUES ('c-3', 's', 'i', 'article', 50, 't', 'u', NOW())`,
		`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url, error_message)
			VALUES ('c-3', 's', 'i', 'article', 50, 't', 'u', 'x')`,
	} {
		_, err := db.Exec(q)
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
			t.Errorf("%s: got %v, want permission denied (42501)", q, err)
		}
	}
	// Every column the classifier's writer sets is allowed.
	if _, err := db.Exec(`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, topics,
		quality_score, is_crime_related, crime_subcategory, title, body, url, published_date)
		VALUES ('c-4', 's', 'i', 'article', '{crime}', 50, TRUE, 'violent_crime', 't', 'b', 'u', NOW()) ON CONFLICT DO NOTHING`); err != nil {
		t.Fatalf("the classifier writer's insert: %v", err)
	}
	var pending int
	if err := admin.QueryRow(`SELECT COUNT(*) FROM classified_outbox WHERE status = 'pending' AND claim_token IS NULL AND retry_count = 0`).Scan(&pending); err != nil || pending != 2 {
		t.Errorf("pending rows without claim or retry state: %d %v, want 2", pending, err)
	}
}

// Every migration reverses cleanly and applies again; one step down from
// the last brings back migration 003's NOTIFY trigger, which 012 drops.
func TestMigrationsDownAndUp(t *testing.T) {
	t.Parallel()
	_, dsn := outboxtest.Database(t)
	log := testenv.Logger(t)
	m, err := postgres.NewMigrator(dsn, migrations.FS, ".", log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	v, dirty, err := m.Version()
	if err != nil || dirty || v != 12 {
		t.Fatalf("version %d dirty %v %v, want 12", v, dirty, err)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	triggers := func(when string, want int) {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM pg_trigger WHERE tgname = 'classified_outbox_notify'`).Scan(&n); err != nil || n != want {
			t.Errorf("notify triggers %s: %d %v, want %d", when, n, err, want)
		}
	}
	triggers("after up", 0)
	if err := m.Down(1); err != nil {
		t.Fatalf("down 012: %v", err)
	}
	triggers("after 012's down", 1)
	if err := m.Down(int(v) - 1); err != nil {
		t.Fatalf("down: %v", err)
	}
	if err := m.Up(); err != nil {
		t.Fatalf("up again: %v", err)
	}
	triggers("after down/up", 0)
}

// Migration 005: a content id is unique per index (two indices, two rows;
// the classifier's ON CONFLICT DO NOTHING still absorbs a re-insertion),
// and claim_token exists. Its down migration restores UNIQUE(content_id),
// keeping the earliest row of each content id, and drops claim_token.
func TestMigration005IdentityPerIndex(t *testing.T) {
	t.Parallel()
	db, dsn := outboxtest.Database(t)
	insert := func(id, index string) {
		t.Helper()
		if _, err := db.Exec(`INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, quality_score, title, url)
			VALUES ($1, 's', $2::text, 'article', 50, $2::text, 'u') ON CONFLICT DO NOTHING`, id, index); err != nil {
			t.Fatalf("insert %s/%s: %v", index, id, err)
		}
	}
	insert("1", "a_classified_content")
	insert("1", "b_classified_content")
	insert("1", "a_classified_content") // re-insertion: no-op
	insert("2", "b_classified_content")
	count := func(q string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT COUNT(*) FROM classified_outbox`); n != 3 {
		t.Fatalf("%d rows, want 3 (1 in two indices, 2 in one)", n)
	}
	if n := count(`SELECT COUNT(*) FROM classified_outbox WHERE claim_token IS NULL`); n != 3 {
		t.Fatalf("claim_token: %d rows with NULL", n)
	}

	m, err := postgres.NewMigrator(dsn, migrations.FS, ".", testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	if err := m.Down(8); err != nil { // 012, 011, 010, 009, 008, 007, 006, then 005
		t.Fatalf("down 012, 011, 010, 009, 008, 007, 006 and 005: %v", err)
	}
	var title string
	if err := db.QueryRow(`SELECT string_agg(content_id || '=' || title, ',' ORDER BY content_id) FROM classified_outbox`).Scan(&title); err != nil ||
		title != "1=a_classified_content,2=b_classified_content" {
		t.Fatalf("after down: %q %v, want the earliest row of each content id", title, err)
	}
	if n := count(`SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'classified_outbox' AND column_name = 'claim_token'`); n != 0 {
		t.Errorf("claim_token still there after down")
	}
	insert("2", "c_classified_content") // UNIQUE(content_id) again
	if n := count(`SELECT COUNT(*) FROM classified_outbox`); n != 2 {
		t.Errorf("%d rows after a conflicting insert under 004, want 2", n)
	}
	if err := m.Up(); err != nil {
		t.Fatalf("up again: %v", err)
	}
	insert("2", "c_classified_content")
	if n := count(`SELECT COUNT(*) FROM classified_outbox`); n != 3 {
		t.Errorf("%d rows after up, want 3", n)
	}
}
