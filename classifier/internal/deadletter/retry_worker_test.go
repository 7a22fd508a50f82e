package deadletter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
)

// openQueue returns a repository over a fresh, migrated database of the
// test's own.
func openQueue(t *testing.T) *deadletter.Repository {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	return deadletter.NewRepository(db)
}

// leasesFor returns a lease table for replica in a database of its own.
func leasesFor(t *testing.T, replica string) *lease.Store {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	s, err := lease.New(lease.Config{DB: db, Replica: replica})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openSlots is a work queue with room for one document that takes none:
// the queue is empty, so nothing is ever submitted.
type openSlots struct{}

func (openSlots) Submit(context.Context, *domain.RawContent) error { return nil }
func (openSlots) ShouldThrottle() bool                             { return false }
func (openSlots) FreeSlots() int                                   { return 1 }

// The retry worker keeps the start/stop contract when Start and Stop race
// from many goroutines, while its loop looks at a real queue every
// millisecond.
func TestRetryWorkerStartStopStress(t *testing.T) {
	t.Parallel()
	repo := openQueue(t)
	es, _ := testenv.Elasticsearch(t)
	store := rawtest.Store(t, es)
	leases := leasesFor(t, "stress")
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		w, err := deadletter.NewRetryWorker(deadletter.RetryConfig{ReplicaID: "stress", Interval: time.Millisecond, Leases: leases},
			repo, store, openSlots{}, testenv.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		return w
	})
}

func TestNewRetryWorkerNeedsAReplicaID(t *testing.T) {
	t.Parallel()
	if _, err := deadletter.NewRetryWorker(deadletter.RetryConfig{}, nil, nil, openSlots{}, testenv.Logger(t)); err == nil {
		t.Fatal("NewRetryWorker accepted a config without ReplicaID")
	}
}

// A retried entry whose document no longer exists is NOT_FOUND and
// exhausted at once, with the attempt counted (IncrementRetry, Enqueue,
// MarkExhausted): retrying what is not there cannot succeed. Before, the
// entry kept its retries and came back every backoff.
func TestRetryWorkerExhaustsAnEntryWhoseDocumentIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := openQueue(t)
	es, _ := testenv.Elasticsearch(t)
	index := "dlqgone" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")) + "_raw_content"
	entry := domain.NewDeadLetterEntry("gone-1", "alpha", index, "timeout", domain.ErrorCodeESTimeout)
	if err := repo.Enqueue(ctx, entry); err != nil {
		t.Fatal(err)
	}
	due, err := repo.List(ctx, deadletter.Filter{}, nil, 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("list = %v, %v", due, err)
	}
	if err := repo.Requeue(ctx, due[0].ID); err != nil { // due now
		t.Fatal(err)
	}
	w, err := deadletter.NewRetryWorker(deadletter.RetryConfig{ReplicaID: "gone", Leases: leasesFor(t, "gone")}, repo, rawtest.Store(t, es), openSlots{}, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("RunOnce = %d, %v; want nothing submitted", n, err)
	}
	got, err := repo.List(ctx, deadletter.Filter{}, nil, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("list = %v, %v", got, err)
	}
	e := got[0]
	if e.ErrorCode != domain.ErrorCodeNotFound || !e.Exhausted || e.ShouldRetry() || !strings.Contains(e.ErrorMessage, "no longer exists") {
		t.Errorf("entry after retry = %s (%q), want NOT_FOUND and exhausted", e.String(), e.ErrorMessage)
	}
	if n, err := repo.CountBySource(ctx); err != nil || n["alpha"] != 0 {
		t.Errorf("CountBySource = %v, %v; want no retryable entry", n, err)
	}
	if s, err := repo.GetStats(ctx); err != nil || s.Exhausted != 1 || s.Pending != 0 {
		t.Errorf("GetStats = %+v, %v; want one exhausted entry", s, err)
	}
	if n, err := repo.Remove(ctx, e.Key()); err != nil || n != 1 {
		t.Errorf("Remove = %d, %v; want 1", n, err)
	}
	if err := repo.MarkExhausted(ctx, e.Key()); !errors.Is(err, deadletter.ErrNotFound) {
		t.Errorf("MarkExhausted of a removed entry = %v, want ErrNotFound", err)
	}
}
