package outbox

import (
	"context"
	"fmt"
)

// Wake sends the NOTIFY on NotifyChannel that wakes the publishers, in a
// statement of its own: call it with a *sql.DB (or a connection outside any
// transaction) after the rows are committed, never inside the inserting
// transaction.
//
// Why not a trigger on the insert: a transaction that notifies takes one
// lock shared by every database of the server at its commit and holds it
// until the commit is durable, WAL flush included. Every notifying commit
// then waits for the previous one's flush: no group commit, so at a
// thousand one-row commits a second a disk whose flushes take a millisecond
// now and then queues the inserts for hundreds of milliseconds (the
// publisher's BenchmarkPublishLag). A notification on its own writes no
// WAL, so its commit does not wait for a flush and holds the lock for
// microseconds.
//
// A notification that is lost (an error here, a writer stopped between its
// commit and its Wake) only delays the rows until the publishers' next
// fallback poll; nothing waits on it.
func Wake(ctx context.Context, db Execer) error {
	if _, err := db.ExecContext(ctx, `SELECT pg_notify($1, '')`, NotifyChannel); err != nil {
		return fmt.Errorf("wake publishers: %w", err)
	}
	return nil
}
