package storage_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/testenv"
)

// Write inserts one document's outbox row, keyed by its raw index and id
// and version; writing it again adds nothing, and the same id in another
// index is another row.
func TestOutboxWriterWriteOneRow(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("postgres", testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	if err := outbox.ApplyTestSchema(ctx, db); err != nil {
		t.Fatal(err)
	}
	w := storage.NewOutboxWriter(db, testenv.Logger(t))
	doc := &domain.ClassifiedContent{ID: "one", SourceName: "s", Index: "s_raw_content", ContentType: "article", Title: "t", URL: "u", Version: 1}
	for range 2 {
		if err := w.Write(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	other := *doc
	other.Index, other.SourceName = "t_raw_content", "t"
	if err := w.Write(ctx, &other); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ` + outbox.Table + ` WHERE content_id = 'one'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d outbox rows for id one, want 2 (one per index)", n)
	}
}
