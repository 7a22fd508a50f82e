package poller

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
)

// Two Stops at once, a claim in flight: both wait for it and both return
// nil once it ends; the second does not wait on a claim the first collected.
func TestConcurrentStopsCollectTheClaimOnce(t *testing.T) {
	t.Parallel()
	done := make(chan claimOutcome, 1)
	p := &Poller{}
	p.inflight.done, p.inflight.n = done, 3
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errs := make(chan error, 2)
	var started sync.WaitGroup
	for range 2 {
		started.Add(1)
		go func() {
			started.Done()
			errs <- p.Stop(ctx)
		}()
	}
	started.Wait()
	done <- claimOutcome{} // the claim in flight ends
	if err := <-errs; err != nil {
		t.Fatalf("first Stop: %v", err)
	}
	// The claim has ended: the other Stop has nothing left to wait for,
	// however soon its context ends.
	cancel()
	if err := <-errs; err != nil {
		t.Fatalf("second Stop waited on a claim already collected: %v", err)
	}
	if p.inflight.done != nil {
		t.Error("Stop left the claim in flight")
	}
}

// The poller keeps the start/stop contract while it polls and claims (run
// with -race).
func TestPollerStartStopStress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idx := h.rawIndex(t, "stress", false)
	h.addDocs(t, idx, "s", 50, time.Now().Add(-time.Hour))
	lifecycletest.Stress(t, func(testing.TB) lifecycle.Component {
		return h.poller(t, Config{IndexPattern: idx, BatchSize: 5, PollInterval: time.Millisecond})
	})
}
