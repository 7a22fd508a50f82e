package processor

import (
	"context"
	"log/slog"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rawindex"
)

// ClaimRegistry is the registry of claims in flight (claim.Registry in the
// service), as the committer uses it: a document taken out of it is no
// longer renewed by the heartbeat.
type ClaimRegistry interface {
	Take(docs ...*domain.RawContent)
}

// LeaseTable is the claim table (lease.Store in the service), as the
// committer uses it: Renew before writing anything of a batch (the one
// ownership check), Finish after the flip, Release what is left for
// another attempt.
type LeaseTable interface {
	Renew(ctx context.Context, claimIDs []int64) (held map[int64]bool, err error)
	Finish(ctx context.Context, claimIDs []int64) error
	Release(ctx context.Context, claimIDs []int64) (int64, error)
}

// claims is the committer's side of the claims on a batch's documents:
// it confirms them before anything is written, stops renewing them once
// the batch is finished, and finishes or releases them after the flip.
type claims struct {
	registry ClaimRegistry // nil: no claims are tracked in flight
	leases   LeaseTable    // nil: no ownership check
	logger   *slog.Logger
}

// confirm returns results without those whose claim this replica no
// longer holds, and renews the others: it is the one ownership check. A
// replica paused or starved past its lease (a zombie) finds its claim
// taken over (the row carries another claim_id) and writes nothing of the
// document, neither its classified document, its outbox row nor its flip:
// the new owner commits it. A claim renewed here is safe from takeover for
// a whole lease, far longer than a commit. When the lease table cannot be
// read, the batch is held back: its claims return after the lease.
func (c *claims) confirm(ctx context.Context, results []Result) []Result {
	if c.leases == nil {
		return results
	}
	raws := make([]*domain.RawContent, len(results))
	for i, r := range results {
		raws[i] = r.Raw
	}
	held, err := c.leases.Renew(ctx, lease.ClaimIDs(raws))
	if err != nil {
		c.logger.WarnContext(ctx, "claims could not be confirmed; the batch is not committed and returns after the lease",
			"documents", len(results), "error", err)
		c.take(results...)
		return nil
	}
	kept := results[:0:0]
	for _, r := range results {
		if r.Raw.Lease == 0 || held[r.Raw.Lease] {
			kept = append(kept, r)
			continue
		}
		c.take(r)
		c.logger.WarnContext(ctx, "claim taken over before the commit; this replica writes nothing of the document, its new owner commits it",
			"content_id", r.Raw.ID, "source", r.Raw.SourceName, "index", r.Raw.Index)
	}
	return kept
}

// take stops renewing the claims of results: their documents are finished
// here, flipped or not, and one left claimed returns after the lease.
func (c *claims) take(results ...Result) {
	if c.registry == nil {
		return
	}
	for _, r := range results {
		c.registry.Take(r.Raw)
	}
}

// finish marks the claims of the changed documents done (package lease).
func (c *claims) finish(ctx context.Context, flipped []rawindex.Change) {
	if c.leases == nil || len(flipped) == 0 {
		return
	}
	raws := make([]*domain.RawContent, len(flipped))
	for i, ch := range flipped {
		raws[i] = ch.Raw
	}
	if err := c.leases.Finish(ctx, lease.ClaimIDs(raws)); err != nil {
		c.logger.WarnContext(ctx, "finished claims not marked; they expire after the lease", "documents", len(raws), "error", err)
	}
}

// release releases the claims of raws, so that their documents are
// claimable again at once, with no stall counted; what names them in the
// log. A release that fails leaves them to their lease.
func (c *claims) release(ctx context.Context, raws []*domain.RawContent, what string) {
	if c.leases == nil || len(raws) == 0 {
		return
	}
	if _, err := c.leases.Release(ctx, lease.ClaimIDs(raws)); err != nil {
		c.logger.WarnContext(ctx, "claims not released; they return after the lease", "claims", what, "documents", len(raws), "error", err)
	}
}
