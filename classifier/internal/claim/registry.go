// Package claim keeps this replica's claims on raw documents alive while they
// are in flight, and lets them go when the replica stops.
//
// A claim is a lease: a row of raw_claims (package lease) whose lease_until
// has passed is free for any replica to take. Leases are short
// (CLASSIFIER_CLAIM_LEASE, 15 s by default), so a killed replica's documents
// flow again within seconds; the Heartbeat renews the claims this replica
// still works on (one UPDATE by claim_id), so a slow batch is not taken over
// while it is healthy. A takeover gives the row a new claim_id: an old owner
// that wakes up after it (a paused process) finds its renewals and the
// committer's ownership check without the claim, and commits nothing.
package claim

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
)

// Registry holds the documents this replica has claimed and not yet
// finished. It is safe for concurrent use. A renewal does not hold it: Add
// never waits for the lease table, and Take waits only for the documents a
// renewal in flight carries.
type Registry struct {
	mu      sync.Mutex
	settled *sync.Cond // signalled when a renewal in flight ends
	docs    map[*domain.RawContent]*tracked
	now     func() time.Time
}

// tracked is the renewal state of one claim.
type tracked struct {
	// added is when the claim was tracked (its age paces the poller).
	added time.Time
	// held is the claimed_at the document is known to carry: that of the
	// claim, or of the last renewal confirmed. A renewal whose answer was
	// lost leaves it as it was; the claim is this replica's as long as the
	// document carries its claimed_by and a claimed_at not before held.
	held time.Time
	// renewing is set while a renewal of the document is in flight: its
	// version may still change, so Take waits.
	renewing bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	r := &Registry{docs: map[*domain.RawContent]*tracked{}, now: time.Now}
	r.settled = sync.NewCond(&r.mu)
	return r
}

// Add tracks claimed documents.
func (r *Registry) Add(docs ...*domain.RawContent) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for _, d := range docs {
		t := &tracked{added: now, held: now}
		if d.ClaimedAt != nil {
			t.held = *d.ClaimedAt
		}
		r.docs[d] = t
	}
}

// Take stops tracking docs. It waits for a renewal of them in flight, so
// once it returns the documents' SeqNo and PrimaryTerm are final and the
// caller may flip them. Documents not tracked are ignored. A nil registry
// does nothing.
func (r *Registry) Take(docs ...*domain.RawContent) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range docs {
		for r.docs[d] != nil && r.docs[d].renewing {
			r.settled.Wait()
		}
		delete(r.docs, d)
	}
}

// Len returns the number of claims in flight.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.docs)
}

// MedianAge returns how long the median claim in flight has been tracked;
// zero with none.
func (r *Registry) MedianAge() time.Duration {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.docs) == 0 {
		return 0
	}
	now := r.now()
	ages := make([]time.Duration, 0, len(r.docs))
	for _, t := range r.docs {
		ages = append(ages, now.Sub(t.added))
	}
	slices.Sort(ages)
	return ages[len(ages)/2]
}

// renewal is one renewal of some tracked claims, between begin and end.
type renewal struct {
	docs []*domain.RawContent
	// held is the claimed_at each of docs is known to carry.
	held []time.Time
}

// slice returns the part of rn from i to j.
func (rn renewal) slice(i, j int) renewal {
	return renewal{docs: rn.docs[i:j], held: rn.held[i:j]}
}

// begin marks the claims last known fresh before due as in flight and
// returns them, or none. They must be handed back to end.
func (r *Registry) begin(due time.Time) renewal {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rn renewal
	for d, t := range r.docs {
		if !t.renewing && t.held.Before(due) {
			t.renewing = true
			rn.docs = append(rn.docs, d)
			rn.held = append(rn.held, t.held)
		}
	}
	return rn
}

// end records how a renewal went: the claims in held are known to carry
// the claimed_at given; those in drop are lost (taken over) and no longer
// tracked: the committer's ownership check (lease.Store.Renew) drops their
// results. The other claims of rn keep their state, and every claim of rn
// is out of flight again.
func (r *Registry) end(rn renewal, held map[*domain.RawContent]time.Time, drop []*domain.RawContent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for d, claimedAt := range held {
		if t := r.docs[d]; t != nil {
			t.held = claimedAt
		}
	}
	for _, d := range rn.docs {
		if t := r.docs[d]; t != nil {
			t.renewing = false
		}
	}
	for _, d := range drop {
		delete(r.docs, d)
	}
	r.settled.Broadcast()
}

// withLocked runs fn on every tracked document with the registry locked and
// no renewal in flight, so no Take completes while fn releases them. The
// documents fn returns are no longer tracked.
func (r *Registry) withLocked(fn func(docs []*domain.RawContent) (drop []*domain.RawContent)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.inFlightLocked() {
		r.settled.Wait()
	}
	docs := make([]*domain.RawContent, 0, len(r.docs))
	for d := range r.docs {
		docs = append(docs, d)
	}
	for _, d := range fn(docs) {
		delete(r.docs, d)
	}
}

func (r *Registry) inFlightLocked() bool {
	for _, t := range r.docs {
		if t.renewing {
			return true
		}
	}
	return false
}

// Sink is where claimed documents go (the batch processor).
type Sink interface {
	Submit(ctx context.Context, doc *domain.RawContent) error
	ShouldThrottle() bool
	FreeSlots() int
}

// PaceDefault is TrackingSink.Pace when zero: a quarter of the heartbeat's
// default interval.
const PaceDefault = IntervalDefault / 4

// TrackingSink registers every document its Sink accepts, so the heartbeat
// renews the claim until the committer takes it. A document the sink
// refuses is not tracked: its lease returns it to the poll.
//
// It also paces the poller: while the median claim in flight is older than
// Pace, it reports the sink as throttled, so no more is claimed until the
// pipeline catches up. Claims then live about as long as it takes to
// finish them: a pipeline slower than the poll does not pile up claims that
// each cost a renewal (a re-index of the raw document) while they wait, and
// documents not claimed stay free for other replicas. The median, not the
// oldest, so one slow document does not hold the poll.
type TrackingSink struct {
	Sink
	Registry *Registry
	// Pace is the median age of the claims in flight above which the poller
	// holds off. Defaults to PaceDefault; keep it well under half the
	// heartbeat interval (a claim is renewed once it is that old). Negative:
	// no pacing.
	Pace time.Duration
}

// Submit passes doc to the sink and tracks it when accepted.
func (t TrackingSink) Submit(ctx context.Context, doc *domain.RawContent) error {
	t.Registry.Add(doc)
	if err := t.Sink.Submit(ctx, doc); err != nil {
		t.Registry.Take(doc)
		return err
	}
	return nil
}

// ShouldThrottle reports the sink as throttled, or the median claim in
// flight older than a positive Pace.
func (t TrackingSink) ShouldThrottle() bool {
	pace := t.Pace
	if pace == 0 {
		pace = PaceDefault
	}
	return t.Sink.ShouldThrottle() || (pace > 0 && t.Registry.MedianAge() > pace)
}
