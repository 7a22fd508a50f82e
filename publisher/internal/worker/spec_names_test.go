package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/outboxtest"
)

// The repository answers to the original design's names: FetchPending takes
// pending rows only, FetchRetryable failed rows that are due only,
// MarkFailed/MarkPublished record their outcome, ResetToPending recovers a
// dead worker's rows, CleanupPublished deletes old published rows and
// GetStats counts them.
func TestOutboxRepositorySpecNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	outboxtest.Insert(t, b.db, outboxtest.Rows("spec", 3))
	first, err := b.repo.FetchPending(ctx, 1)
	if err != nil || len(first.Entries) != 1 {
		t.Fatalf("FetchPending = %d rows, %v; want 1", len(first.Entries), err)
	}
	// The failed row is due at once; FetchPending leaves it, FetchRetryable takes it.
	if m, err := b.repo.MarkFailed(ctx, first.Token, []outbox.Failure{{ID: first.Entries[0].ID, Error: "redis down"}}); err != nil || len(m.Recorded) != 1 {
		t.Fatalf("MarkFailed = %+v, %v", m, err)
	}
	if none, err := b.repo.FetchRetryable(ctx, 10); err != nil || len(none.Entries) != 1 || none.Entries[0].ID != first.Entries[0].ID {
		t.Fatalf("FetchRetryable = %+v, %v; want only the failed row", none.Entries, err)
	}
	pending, err := b.repo.FetchPending(ctx, 10)
	if err != nil || len(pending.Entries) != 2 {
		t.Fatalf("FetchPending = %d rows, %v; want the 2 pending rows only", len(pending.Entries), err)
	}
	for _, e := range pending.Entries {
		if e.ID == first.Entries[0].ID {
			t.Errorf("FetchPending took the failed row %s", e.ID)
		}
	}
	if again, err := b.repo.FetchRetryable(ctx, 10); err != nil || len(again.Entries) != 0 {
		t.Errorf("FetchRetryable took %d claimed rows (%v), want 0", len(again.Entries), err)
	}
	if _, err := b.db.Exec(`UPDATE classified_outbox SET updated_at = NOW() - INTERVAL '10 minutes' WHERE status = 'publishing'`); err != nil {
		t.Fatal(err)
	}
	if n, err := b.repo.ResetToPending(ctx, 5*time.Minute); err != nil || n != 3 {
		t.Fatalf("ResetToPending = %d, %v; want 3", n, err)
	}
	all, err := b.repo.FetchPending(ctx, 10)
	if err != nil || len(all.Entries) != 3 {
		t.Fatalf("FetchPending after reset = %d rows, %v", len(all.Entries), err)
	}
	ids := make([]string, len(all.Entries))
	for i, e := range all.Entries {
		ids[i] = e.ID
	}
	if n, err := b.repo.MarkPublished(ctx, all.Token, ids); err != nil || n != 3 {
		t.Fatalf("MarkPublished = %d, %v", n, err)
	}
	s, err := b.repo.GetStats(ctx)
	if err != nil || s.Counts["published"] != 3 {
		t.Fatalf("GetStats = %+v, %v; want 3 published", s, err)
	}
	if _, err := b.db.Exec(`UPDATE classified_outbox SET published_at = NOW() - INTERVAL '2 days'`); err != nil {
		t.Fatal(err)
	}
	if n, err := b.repo.CleanupPublished(ctx, 24*time.Hour, 2); err != nil || n != 3 {
		t.Errorf("CleanupPublished = %d, %v; want 3", n, err)
	}
}
