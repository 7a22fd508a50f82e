package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"

	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/postgres/postgrestest"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outboxtest"
)

// columnInfo is what the contract test compares of one column.
type columnInfo struct {
	Name, Type, Nullable, Default, Generated string
}

func tableColumns(t *testing.T, db *sql.DB) []columnInfo {
	t.Helper()
	rows, err := db.Query(`
		SELECT column_name, data_type || COALESCE('(' || character_maximum_length || ')', ''), is_nullable,
		       COALESCE(column_default, ''), COALESCE(generation_expression, '')
		FROM information_schema.columns WHERE table_name = $1 ORDER BY column_name`, outbox.Table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []columnInfo
	for rows.Next() {
		var c columnInfo
		if err := rows.Scan(&c.Name, &c.Type, &c.Nullable, &c.Default, &c.Generated); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// constraints returns the table's unique, primary key and check constraints
// and its triggers, by definition.
func constraints(t *testing.T, db *sql.DB) []string {
	t.Helper()
	return postgrestest.Strings(t, db, `
		SELECT contype::text || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = $1::regclass
		UNION ALL
		SELECT 'trigger ' || tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal
		ORDER BY 1`, outbox.Table)
}

// The migrations own classified_outbox; infrastructure/outbox holds the
// contract both services code against (the column list, the classifier's
// insert) and the schema the classifier's tests create. This test fails as
// soon as a migration and either of them disagree.
func TestOutboxContractMatchesMigrations(t *testing.T) {
	t.Parallel()
	migrated, _ := outboxtest.Database(t)
	scratch, err := sql.Open("postgres", testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	if err := outbox.ApplyTestSchema(context.Background(), scratch); err != nil {
		t.Fatal(err)
	}

	got, want := tableColumns(t, scratch), tableColumns(t, migrated)
	if !slices.Equal(got, want) {
		t.Errorf("outbox.TestSchema columns differ from the migrated table:\n test schema %+v\n migrations  %+v", got, want)
	}
	if got, want := constraints(t, scratch), constraints(t, migrated); !slices.Equal(got, want) {
		t.Errorf("outbox.TestSchema constraints and triggers differ from the migrated table:\n test schema %q\n migrations  %q", got, want)
	}

	// Every column the contract reads exists; the columns it does not read
	// are the database's own (generated, or the claim token).
	var names []string
	for _, c := range want {
		names = append(names, c.Name)
	}
	for _, c := range outbox.Columns() {
		if !slices.Contains(names, c) {
			t.Errorf("outbox.Columns names %q, which the migrations do not create", c)
		}
	}
	for _, n := range names {
		if !slices.Contains(outbox.Columns(), n) && !slices.Contains([]string{"channel", "claim_token"}, n) {
			t.Errorf("migrated column %q is neither in outbox.Columns nor one of the database's own", n)
		}
	}

	// The rows inserted through the contract read back through it.
	msg := outbox.Message{ContentID: "c", SourceName: "s", IndexName: "s_classified_content", ContentType: "article",
		Topics: []string{"news"}, QualityScore: 50, Title: "t", Body: "b", URL: "u"}
	if err := outbox.InsertBatch(context.Background(), migrated, []outbox.Message{msg}); err != nil {
		t.Fatalf("insert through the contract: %v", err)
	}
	var e outbox.Entry
	if err := outbox.Scan(migrated.QueryRow(`SELECT `+outbox.SelectList()+` FROM `+outbox.Table), &e); err != nil {
		t.Fatalf("read through the contract: %v", err)
	}
	if e.ContentID != "c" || e.Body != "b" || e.Status != outbox.StatusPending {
		t.Errorf("read back %+v", e)
	}
}

// Migration 006 grants the classifier's role INSERT on exactly the columns
// the classifier writes.
func TestClassifierGrantIsInsertColumns(t *testing.T) {
	t.Parallel()
	db, _ := outboxtest.Database(t)
	rows, err := db.Query(`SELECT column_name FROM information_schema.column_privileges
		WHERE table_name = $1 AND grantee = 'classifier' AND privilege_type = 'INSERT' ORDER BY column_name`, outbox.Table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var granted []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		granted = append(granted, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(granted) == 0 {
		var exists bool
		if err := db.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'classifier')`).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if !exists {
			testenv.Unavailable(t, "postgres role classifier", errors.New("role classifier does not exist (scripts/services.sh up creates it)"))
		}
	}
	want := outbox.InsertColumns()
	slices.Sort(want)
	if !slices.Equal(granted, want) {
		t.Errorf("classifier may insert %v, the contract writes %v", granted, want)
	}
}
