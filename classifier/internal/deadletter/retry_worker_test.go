package deadletter_test

import (
	"context"
	"github.com/north-cloud/classifier/internal/dbtest"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
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
	store := storage.NewContentStore(es)
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		w, err := deadletter.NewRetryWorker(deadletter.RetryConfig{ReplicaID: "stress", Interval: time.Millisecond},
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
