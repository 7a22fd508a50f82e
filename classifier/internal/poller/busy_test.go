package poller

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/clock"
)

// A stream that pauses for longer than the poll interval is still a
// stream: at the default 2 s interval, an empty poll 10 s after the last
// find still polls again within busyWaitMax, and only after busyWindowMin
// with nothing found does the replica wait the whole interval. Before, the
// first gap longer than the interval held the next document up to a whole
// interval: the end-to-end latency's tail.
func TestStepKeepsPollingSoonThroughAPauseOfTheStream(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.sink = &collectSink{}
	idx := h.rawIndex(t, "pause", false)
	h.addDocs(t, idx, "p", 3, time.Now().Add(-time.Minute))
	p := h.poller(t, Config{IndexPattern: idx, BatchSize: 10, PollInterval: PollIntervalDefault})
	manual := clock.NewManual(time.Now())
	p.now = manual.Now
	step := func() time.Duration {
		t.Helper()
		wait := p.step(context.Background())
		if _, err := p.inflight.collect(); err != nil {
			t.Fatalf("claim: %v", err)
		}
		return wait
	}
	if wait := step(); wait > busyWaitMax*6/5 {
		t.Fatalf("a poll that found documents waits %s, want at most busyWaitMax", wait)
	}
	manual.Advance(10 * time.Second)
	if wait := step(); wait > busyWaitMax*6/5 {
		t.Errorf("an empty poll 10 s after a find (5 poll intervals) waits %s, want at most busyWaitMax (%s, plus jitter)", wait, busyWaitMax)
	}
	manual.Advance(busyWindowMin)
	if wait := step(); wait < PollIntervalDefault*4/5 {
		t.Errorf("an empty poll after %s with nothing found waits %s, want the poll interval (%s less jitter)", busyWindowMin, wait, PollIntervalDefault)
	}
}
