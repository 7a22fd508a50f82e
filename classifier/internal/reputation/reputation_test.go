package reputation

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
)

// setup returns a repository over a fresh, migrated database of the test's
// own.
func setup(t *testing.T) *Repository {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	return NewRepository(db)
}

// Many workers adding to the same sources at once lose nothing: every
// update is one atomic statement that adds its deltas in the database.
func TestConcurrentAddsLoseNothing(t *testing.T) {
	t.Parallel()
	repo := setup(t)
	logger := testenv.Logger(t)

	const workers, batches = 12, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range batches {
				deltas := map[string]Delta{
					"shared": {Total: 3, Classified: 2, Failed: 1, Crime: 1, QualitySum: 150},
					"other":  {Total: 1, Classified: 1, QualitySum: int64(w)},
				}
				if err := repo.Add(context.Background(), deltas); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := repo.Get(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	n := int64(workers * batches)
	if s.TotalDocuments != 3*n || s.ClassifiedDocuments != 2*n || s.FailedDocuments != n || s.CrimeDocuments != n {
		t.Errorf("shared = %+v, want totals %d/%d/%d/%d", s, 3*n, 2*n, n, n)
	}
	if s.AverageQuality != 75 || s.ReputationScore <= 0 || s.ReputationScore > 1 {
		t.Errorf("average quality %.2f (want 75), reputation %.3f (want in (0,1])", s.AverageQuality, s.ReputationScore)
	}

	// The cache serves the stored score, and the default for unknown sources.
	cache := NewCache(repo, time.Hour, logger)
	if err := cache.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer cache.Stop(context.Background())
	if got := cache.Score("shared"); got != s.ReputationScore {
		t.Errorf("cached score %.4f, want %.4f", got, s.ReputationScore)
	}
	if got := cache.Score("never-seen"); got != DefaultScore {
		t.Errorf("unknown source score %.2f, want %.2f", got, DefaultScore)
	}
}

// The cache keeps the start/stop contract when Start and Stop race from
// many goroutines, while it refreshes from a real database.
func TestCacheStartStopStress(t *testing.T) {
	t.Parallel()
	repo := setup(t)
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		return NewCache(repo, time.Millisecond, testenv.Logger(t))
	})
}
