package poller

import (
	"context"
	"errors"
	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rawindex"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/north-cloud/classifier/internal/domain"
	classtel "github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/testenv"
)

// fullSink is a work queue with no room.
type fullSink struct{ throttle bool }

func (fullSink) Submit(context.Context, *domain.RawContent) error { return errors.New("full") }
func (s fullSink) ShouldThrottle() bool                           { return s.throttle }
func (fullSink) FreeSlots() int                                   { return 0 }

// A poll against a work queue over 80% full (or with no free slot) is
// skipped without touching Elasticsearch: the poller holds off.
func TestPollerHoldsOffWhenTheQueueIsFull(t *testing.T) {
	t.Parallel()
	metrics, err := classtel.New(noop.NewMeterProvider().Meter("t"), classtel.Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	db, _ := dbtest.Migrated(t)
	leases, err := lease.New(lease.Config{DB: db, Replica: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []fullSink{{throttle: true}, {throttle: false}} {
		// No Elasticsearch client at all: a poll that reached it would panic.
		p, err := New(Config{ReplicaID: "r", Leases: leases, Raw: &rawindex.Store{}}, sink, metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := p.PollOnce(context.Background()); !errors.Is(err, errThrottled) || n != 0 {
			t.Errorf("throttle=%t: PollOnce = %d, %v; want errThrottled", sink.throttle, n, err)
		}
	}
	if _, err := New(Config{}, fullSink{}, metrics, nil, testenv.Logger(t)); err == nil {
		t.Error("New without a replica id must fail")
	}
}
