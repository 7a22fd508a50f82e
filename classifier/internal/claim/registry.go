// Package claim keeps this replica's claims on raw documents alive while they
// are in flight, and lets them go when the replica stops.
//
// A claim is a lease: a document in status processing whose claimed_at is
// older than the lease is free for any replica to take. Leases are short
// (CLASSIFIER_CLAIM_LEASE, 15 s by default), so a killed replica's documents
// flow again within seconds; the Heartbeat renews the claims this replica
// still works on, so a slow batch is not taken over while it is healthy.
// Every renewal is conditional on the version this replica holds
// (if_seq_no/if_primary_term), exactly like the final status flip: an old
// owner that wakes up after a takeover (a paused process) finds its renewal
// and its flip refused, and commits nothing.
package claim

import (
	"context"
	"sync"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
)

// Registry holds the documents this replica has claimed and not yet
// finished. It is safe for concurrent use. A renewal does not hold it: Add
// never waits for Elasticsearch, and Take waits only for the documents a
// renewal in flight carries.
type Registry struct {
	mu      sync.Mutex
	settled *sync.Cond // signalled when a renewal in flight ends
	docs    map[*domain.RawContent]*tracked
}

// tracked is the renewal state of one claim.
type tracked struct {
	// held is the claimed_at the document is known to carry: that of the
	// claim, or of the last renewal confirmed.
	held time.Time
	// sent is the claimed_at of the last renewal sent and not confirmed
	// (zero when none), so a renewal that timed out but went through is
	// recognized as this replica's own.
	sent time.Time
	// renewing is set while a renewal of the document is in flight: its
	// version may still change, so Take waits.
	renewing bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	r := &Registry{docs: map[*domain.RawContent]*tracked{}}
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
	for _, d := range docs {
		t := &tracked{}
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

// renewal is one renewal of some tracked claims, between begin and end.
type renewal struct {
	docs []*domain.RawContent
	// sent is the claimed_at of the last renewal sent for each of docs and
	// not confirmed (zero when none).
	sent []time.Time
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
			rn.sent = append(rn.sent, t.sent)
		}
	}
	return rn
}

// end records how a renewal sent at at went: the claims in held are known
// to carry the claimed_at given (confirmed, or found to be this replica's
// own); the renewal of those in unknown may or may not have gone through;
// those in drop are lost. The other claims of rn keep their state, and
// every claim of rn is out of flight again.
func (r *Registry) end(rn renewal, at time.Time, held map[*domain.RawContent]time.Time, unknown, drop []*domain.RawContent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for d, claimedAt := range held {
		if t := r.docs[d]; t != nil {
			t.held, t.sent = claimedAt, time.Time{}
		}
	}
	for _, d := range unknown {
		if t := r.docs[d]; t != nil {
			t.sent = at
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

// TrackingSink registers every document its Sink accepts, so the heartbeat
// renews the claim until the committer takes it. A document the sink
// refuses is not tracked: its lease returns it to the poll.
type TrackingSink struct {
	Sink
	Registry *Registry
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
