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
// finished: what the lease table does not know, namely which of its rows
// this process still works on, since when, and when it last renewed each.
// It is safe for concurrent use. Nothing in it waits for the lease table: a
// renewal changes only the row's lease_until, never the document's version,
// so Take never waits for one; a renewal that ends after its documents were
// taken finds them gone and changes nothing.
type Registry struct {
	mu   sync.Mutex
	docs map[*domain.RawContent]*tracked
	now  func() time.Time
}

// tracked is what the registry knows of one claim.
type tracked struct {
	// added is when the claim was tracked (its age paces the poller).
	added time.Time
	// renewed is when the claim was made or last renewed: the heartbeat
	// renews it once that is half an interval ago.
	renewed time.Time
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{docs: map[*domain.RawContent]*tracked{}, now: time.Now}
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
		r.docs[d] = &tracked{added: now, renewed: now}
	}
}

// Take stops tracking docs: they are finished, or their claim was lost.
// Documents not tracked are ignored. A nil registry does nothing.
func (r *Registry) Take(docs ...*domain.RawContent) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range docs {
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

// due returns the documents whose claims were made or last renewed before
// due.
func (r *Registry) due(before time.Time) []*domain.RawContent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*domain.RawContent
	for d, t := range r.docs {
		if t.renewed.Before(before) {
			out = append(out, d)
		}
	}
	return out
}

// renewed records the renewal at of the claims of docs still tracked.
func (r *Registry) renewed(docs []*domain.RawContent, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range docs {
		if t := r.docs[d]; t != nil {
			t.renewed = at
		}
	}
}

// drop stops tracking docs and returns those it was tracking.
func (r *Registry) drop(docs []*domain.RawContent) []*domain.RawContent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*domain.RawContent
	for _, d := range docs {
		if r.docs[d] != nil {
			delete(r.docs, d)
			out = append(out, d)
		}
	}
	return out
}

// all returns every tracked document.
func (r *Registry) all() []*domain.RawContent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*domain.RawContent, 0, len(r.docs))
	for d := range r.docs {
		out = append(out, d)
	}
	return out
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
// each cost a renewal (an UPDATE of the lease table) while they wait, and
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
