package poller

import "context"

// The loop overlaps each claim with the next search: a claim is one bulk
// update of up to BatchSize documents, a search one multi-search, and
// waiting for each in turn left Elasticsearch and the poller idle half the
// time. At most one claim is in flight; the next step collects it before
// starting its own, so claims still happen one after another and the loop
// alone touches the poller's loop state.

// claimOutcome is how a claim in flight ended.
type claimOutcome struct {
	r   pollResult
	err error
}

// launch claims f in the background. The claim in flight, if any, must
// have been collected.
func (p *Poller) launch(ctx context.Context, f found) {
	done := make(chan claimOutcome, 1)
	p.claiming, p.claimingN = done, len(f.docs)
	go func() {
		r, err := p.claim(ctx, f)
		done <- claimOutcome{r: r, err: err}
	}()
}

// collect waits for the claim in flight and returns its result, or nil
// when there was none.
func (p *Poller) collect() (*pollResult, error) {
	if p.claiming == nil {
		return nil, nil
	}
	out := <-p.claiming
	p.claiming, p.claimingN = nil, 0
	return &out.r, out.err
}
