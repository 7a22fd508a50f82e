package worker_test

import (
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/worker"
)

// Every background component of the publisher keeps the start/stop
// contract when started and stopped from many goroutines at once, while
// rows are being published (run with -race).
func TestComponentsStartStopStress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	rdb := rs.Client()
	outboxtest.Insert(t, b.db, outboxtest.Rows("stress", 300))
	log := testenv.Logger(t)
	t.Run("outbox_worker", func(t *testing.T) {
		lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
			return b.newWorker(t, worker.Config{ListenURL: b.dsn, PollInterval: 10 * time.Millisecond, BatchSize: 7}, b.repo, rdb)
		})
	})
	t.Run("outbox_rescuer", func(t *testing.T) {
		lifecycletest.Stress(t, func(testing.TB) lifecycle.Component {
			return worker.NewRescuer(worker.RescuerConfig{StaleAfter: time.Minute, Interval: time.Millisecond}, b.repo, b.metrics, log)
		})
	})
	t.Run("outbox_cleaner", func(t *testing.T) {
		lifecycletest.Stress(t, func(testing.TB) lifecycle.Component {
			return worker.NewCleaner(worker.CleanerConfig{Retention: time.Hour, Interval: time.Millisecond}, b.repo, b.metrics, log)
		})
	})
	// The stress published rows; none was lost or left claimed.
	counts := outboxtest.Counts(t, b.db)
	if counts["publishing"] != 0 || counts["failed"] != 0 || counts["pending"]+counts["published"] != 300 {
		t.Errorf("rows after the stress: %v", counts)
	}
}
