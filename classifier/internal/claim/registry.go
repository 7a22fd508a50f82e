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
// finished. It is safe for concurrent use.
type Registry struct {
	mu sync.Mutex
	// docs maps each tracked document to the claimed_at of the last
	// renewal sent for it (zero before the first), so a renewal that timed
	// out but went through is recognized as this replica's own.
	docs map[*domain.RawContent]time.Time
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{docs: map[*domain.RawContent]time.Time{}}
}

// Add tracks claimed documents.
func (r *Registry) Add(docs ...*domain.RawContent) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range docs {
		r.docs[d] = time.Time{}
	}
}

// Take stops tracking docs. It waits for a renewal in flight, so once it
// returns the documents' SeqNo and PrimaryTerm are final and the caller may
// flip them. Documents not tracked are ignored. A nil registry does nothing.
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

// withLocked runs fn on the tracked documents with the registry locked, so
// no Take completes while fn renews or releases them. fn may record the
// claimed_at it sent for a document in sent.
func (r *Registry) withLocked(fn func(docs []*domain.RawContent, sent map[*domain.RawContent]time.Time) (drop []*domain.RawContent)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	docs := make([]*domain.RawContent, 0, len(r.docs))
	for d := range r.docs {
		docs = append(docs, d)
	}
	for _, d := range fn(docs, r.docs) {
		delete(r.docs, d)
	}
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
