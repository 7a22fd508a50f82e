package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/publisher/internal/outboxtest"
)

// An insert into the migrated outbox sends no NOTIFY from inside its own
// transaction (migration 012): a notifying commit holds the server's
// NOTIFY lock until its WAL flush, so notifying inserts cannot share a
// flush. The writer wakes the publishers afterwards with outbox.Wake.
//
// Notifications arrive in commit order, so the first one after a plain
// insert followed by a marker NOTIFY is the marker exactly when the insert
// sent none; no wait for an absence.
func TestInsertNotifiesOnlyThroughWake(t *testing.T) {
	t.Parallel()
	db, dsn := outboxtest.Database(t)
	ctx := context.Background()
	l := pq.NewListener(dsn, 10*time.Millisecond, time.Second, nil)
	t.Cleanup(func() { _ = l.Close() })
	if err := l.Listen(outbox.NotifyChannel); err != nil {
		t.Fatalf("listen: %v", err)
	}
	next := func(what string) string {
		t.Helper()
		deadline := time.After(time.Minute) // a failure's bound, not a measurement
		for {
			select {
			case n := <-l.Notify:
				if n != nil { // nil marks a reconnect
					return n.Extra
				}
			case <-deadline:
				t.Fatalf("no notification for %s", what)
			}
		}
	}

	if err := outbox.InsertBatch(ctx, db, outboxtest.Rows("wake", 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `SELECT pg_notify($1, 'marker')`, outbox.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	if got := next("the marker"); got != "marker" {
		t.Fatalf("first notification after a plain insert has payload %q: the insert notified inside its transaction", got)
	}
	if err := outbox.Wake(ctx, db); err != nil {
		t.Fatal(err)
	}
	if got := next("Wake"); got != "" {
		t.Fatalf("Wake's notification has payload %q, want empty", got)
	}
}
