package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/testenv"
)

// setup returns a scratch database holding the outbox table of TestSchema.
func setup(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := outbox.ApplyTestSchema(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

func entries(t *testing.T, db *sql.DB) []outbox.Entry {
	t.Helper()
	rows, err := db.Query(`SELECT ` + outbox.SelectList() + ` FROM ` + outbox.Table + ` ORDER BY index_name, content_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outbox.Entry
	for rows.Next() {
		var e outbox.Entry
		if err := outbox.Scan(rows, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every field of a Message comes back as it was written, and the queue
// state starts as the table's defaults: pending, no retry, no claim.
func TestInsertBatchRoundTrip(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	sub := "violent_crime"
	published := time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC)
	msgs := []outbox.Message{
		{ContentID: "a", SourceName: "src", IndexName: "src_classified_content", ContentType: "article",
			Topics: []string{"crime", "local"}, QualityScore: 81, IsCrimeRelated: true, CrimeSubcategory: &sub,
			Title: "Title", Body: "Body", URL: "https://example.com/a", PublishedDate: &published,
			Version: 2, ChangedFields: []string{"topics"}, CanonicalURL: "https://example.com/a",
			DuplicateOf: &outbox.DocRef{Index: "wire_raw_content", ID: "w1", Kind: "content"},
			Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{ContentID: "b", SourceName: "src", IndexName: "src_classified_content", ContentType: "video",
			QualityScore: 10, Title: "No topics", URL: "https://example.com/b"},
	}
	if err := outbox.InsertBatch(ctx, db, msgs); err != nil {
		t.Fatal(err)
	}
	got := entries(t, db)
	if len(got) != 2 {
		t.Fatalf("rows: %d, want 2", len(got))
	}
	for i, e := range got {
		want := msgs[i]
		if want.Topics == nil {
			want.Topics = []string{}
		}
		if want.Version == 0 {
			want.Version = 1 // an unset version is the first
		}
		if e.PublishedDate != nil {
			utc := e.PublishedDate.UTC()
			e.PublishedDate = &utc
		}
		if !reflect.DeepEqual(e.Message, want) {
			t.Errorf("row %d message:\n got %+v\nwant %+v", i, e.Message, want)
		}
		if e.ID == "" || e.Status != outbox.StatusPending || e.RetryCount != 0 || e.MaxRetries != 5 ||
			e.ErrorMessage != nil || e.PublishedAt != nil || e.NextRetryAt != nil || e.CreatedAt.IsZero() {
			t.Errorf("row %d queue state: %+v", i, e)
		}
	}
}

// A document already in the outbox is left as it was; the same content id
// in another index is another document.
func TestInsertBatchConflictIsNoop(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	first := outbox.Message{ContentID: "x", SourceName: "s", IndexName: "i1", ContentType: "article", Title: "first", URL: "u"}
	again := first
	again.Title = "second"
	other := first
	other.IndexName = "i2"
	if err := outbox.InsertBatch(ctx, db, []outbox.Message{first}); err != nil {
		t.Fatal(err)
	}
	if err := outbox.InsertBatch(ctx, db, []outbox.Message{again, other}); err != nil {
		t.Fatal(err)
	}
	got := entries(t, db)
	if len(got) != 2 || got[0].Title != "first" || got[1].IndexName != "i2" {
		t.Fatalf("rows after re-insertion: %+v", got)
	}
	if err := outbox.InsertBatch(ctx, db, nil); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
}

// A batch larger than one statement may carry is split, and every row is
// written.
func TestInsertBatchOverStatementLimit(t *testing.T) {
	t.Parallel()
	db := setup(t)
	n := outbox.MaxInsertRows + 3
	msgs := make([]outbox.Message, n)
	for i := range msgs {
		msgs[i] = outbox.Message{ContentID: fmt.Sprint(i), SourceName: "s", IndexName: "i", ContentType: "article", Title: "t", URL: "u"}
	}
	if err := outbox.InsertBatch(context.Background(), db, msgs); err != nil {
		t.Fatal(err)
	}
	var count int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ` + outbox.Table).Scan(&count); err != nil || count != n {
		t.Fatalf("rows: %d %v, want %d", count, err, n)
	}
}

// A refused insert is returned, wrapped with the operation's name.
func TestInsertBatchError(t *testing.T) {
	t.Parallel()
	db := setup(t)
	err := outbox.InsertBatch(context.Background(), db, []outbox.Message{{ContentID: "x"}}) // no index, title...: still valid SQL
	if err != nil {
		t.Fatalf("empty strings are values: %v", err)
	}
	if _, err := db.Exec(`DROP TABLE ` + outbox.Table); err != nil {
		t.Fatal(err)
	}
	err = outbox.InsertBatch(context.Background(), db, []outbox.Message{{ContentID: "y"}})
	if err == nil {
		t.Fatal("insert into a missing table succeeded")
	}
	if !strings.HasPrefix(err.Error(), "insert outbox rows: ") {
		t.Errorf("error %q does not name the operation", err)
	}
}

// The classifier writes the envelope and nothing of the queue state.
func TestInsertColumnsAreTheEnvelope(t *testing.T) {
	t.Parallel()
	all, written := outbox.Columns(), outbox.InsertColumns()
	if all[0] != "id" {
		t.Errorf("first column %q, want id", all[0])
	}
	for _, c := range written {
		if !slices.Contains(all, c) {
			t.Errorf("insert column %q is not read back", c)
		}
	}
	for _, publisherOwned := range []string{"id", "status", "retry_count", "max_retries", "error_message",
		"created_at", "updated_at", "published_at", "next_retry_at"} {
		if slices.Contains(written, publisherOwned) {
			t.Errorf("the classifier must not write %s", publisherOwned)
		}
	}
	if n := outbox.MaxInsertRows * len(written); n > 65535 {
		t.Errorf("MaxInsertRows x %d columns = %d bind parameters, over Postgres's 65,535", len(written), n)
	}
	// One column per field, except DuplicateOf: its index, id and kind.
	if got := reflect.TypeFor[outbox.Message]().NumField() + 2; got != len(written) {
		t.Errorf("Message has fields for %d columns, %d insert columns", got, len(written))
	}
}
