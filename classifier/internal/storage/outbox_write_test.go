package storage_test

import (
	"context"
	"testing"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/outbox"
)

// Write inserts one document's outbox row, keyed by its raw index and id
// and version; writing it again adds nothing, and the same id in another
// index is another row.
func TestOutboxWriterWriteOneRow(t *testing.T) {
	t.Parallel()
	w, db := newOutboxWriter(t)
	ctx := context.Background()
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
