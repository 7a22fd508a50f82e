package poller

import (
	"context"
	"fmt"
	"sync"
)

// The loop overlaps each claim with the next search: a claim is one
// statement of the lease table for up to BatchSize documents, a search one
// multi-search, and waiting for each in turn left both idle half the time.
// At most one claim is in flight; the next step collects it before
// starting its own, so claims still happen one after another.

// claimOutcome is how a claim in flight ended.
type claimOutcome struct {
	r   pollResult
	err error
}

// inflight is the claim in flight. The loop launches and collects it; Stop
// collects it once the loop has ended, from any goroutine.
type inflight struct {
	mu   sync.Mutex
	done chan claimOutcome // nil when no claim is in flight
	n    int               // documents the claim carries
	// collecting serializes Stops' collection: a second Stop waits for the
	// first, then finds the claim collected.
	collecting sync.Mutex
}

// launch runs claim in the background. The claim in flight, if any, must
// have been collected.
func (f *inflight) launch(n int, claim func() (pollResult, error)) {
	done := make(chan claimOutcome, 1)
	f.mu.Lock()
	f.done, f.n = done, n
	f.mu.Unlock()
	go func() {
		r, err := claim()
		done <- claimOutcome{r: r, err: err}
	}()
}

// documents returns how many documents the claim in flight carries.
func (f *inflight) documents() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// collect waits for the claim in flight and returns its result, or nil
// when there was none.
func (f *inflight) collect() (*pollResult, error) {
	f.collecting.Lock()
	defer f.collecting.Unlock()
	done := f.current()
	if done == nil {
		return nil, nil
	}
	out := <-done
	f.clear()
	return &out.r, out.err
}

// wait is collect bounded by ctx, for Stop: it returns an error when ctx
// ends first, leaving the claim in flight to end on its own.
func (f *inflight) wait(ctx context.Context) error {
	f.collecting.Lock()
	defer f.collecting.Unlock()
	done := f.current()
	if done == nil {
		return nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		select { // select picks at random between two ready cases
		case <-done:
		default:
			return fmt.Errorf("stop poller: claim in flight: %w", ctx.Err())
		}
	}
	f.clear()
	return nil
}

// current returns the outcome channel of the claim in flight; nil when none.
func (f *inflight) current() chan claimOutcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

func (f *inflight) clear() {
	f.mu.Lock()
	f.done, f.n = nil, 0
	f.mu.Unlock()
}
