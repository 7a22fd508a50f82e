package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/testenv"
)

// WriteBatch wakes the publishers after its rows are committed, with a
// NOTIFY of its own (outbox.Wake): the outbox table has no trigger that
// notifies from inside the insert's transaction any more.
//
// Notifications arrive in commit order: the first one after WriteBatch and
// a marker NOTIFY is the writer's exactly when the writer sent one.
func TestOutboxWriterWakesAfterCommit(t *testing.T) {
	t.Parallel()
	db, dsn := scratchOutbox(t)
	ctx := context.Background()
	w := storage.NewOutboxWriter(db, testenv.Logger(t))
	l := pq.NewListener(dsn, 10*time.Millisecond, time.Second, nil)
	t.Cleanup(func() { _ = l.Close() })
	if err := l.Listen(outbox.NotifyChannel); err != nil {
		t.Fatalf("listen: %v", err)
	}
	doc := &domain.ClassifiedContent{ID: "woken", SourceName: "s", Index: "s_raw_content", ContentType: "article", Title: "t", URL: "u", Version: 1}
	if err := w.WriteBatch(ctx, []*domain.ClassifiedContent{doc}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `SELECT pg_notify($1, 'marker')`, outbox.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Minute) // a failure's bound, not a measurement
	for {
		select {
		case n := <-l.Notify:
			if n == nil { // a reconnect
				continue
			}
			if n.Extra != "" {
				t.Fatalf("first notification after WriteBatch has payload %q: the writer did not wake the publishers", n.Extra)
			}
			return
		case <-deadline:
			t.Fatal("no notification at all")
		}
	}
}
