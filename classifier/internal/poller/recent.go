package poller

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawindex"
)

// A search leaves out the documents under a live claim (lease.Store.Live),
// but the poll overlaps each claim with the next search (claim.go): the
// claims of what one search found may not be rows of the lease table yet
// when the next search runs. The poller remembers the documents it has just
// found and leaves them out of their index's searches for ClaimVisibility.
// Should a search still return one after that, the lease table refuses its
// claim (a live lease, or a finished claim's version): it is lost, never
// won twice.

// recentClaimsMax bounds the just-found documents remembered per index
// (recentClaims.max), and so the size of the search's must_not. Past it the
// poller refreshes the index itself (one request) and forgets the documents
// found before.
const recentClaimsMax = 4000

// recentClaims remembers, per index, the documents this replica just found
// (and so is claiming, or lost to another replica), to leave them out of
// the index's searches for ClaimVisibility. It is safe for concurrent use.
type recentClaims struct {
	raw        *rawindex.Store
	visibility time.Duration
	// max is recentClaimsMax; tests lower it.
	max    int
	logger *slog.Logger
	now    func() time.Time

	mu  sync.Mutex
	ids map[string]map[string]time.Time // index -> _id -> found at
}

func newRecentClaims(cfg *Config, logger *slog.Logger, now func() time.Time) *recentClaims {
	return &recentClaims{raw: cfg.Raw, visibility: cfg.ClaimVisibility, max: recentClaimsMax, logger: logger, now: now,
		ids: map[string]map[string]time.Time{}}
}

// note remembers the documents a search found, from now: the claim that
// follows may not have been decided, let alone seen by its index's
// refresh, when the next search runs.
func (rc *recentClaims) note(docs []*domain.RawContent) {
	now := rc.now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, d := range docs {
		ids := rc.ids[d.Index]
		if ids == nil {
			ids = map[string]time.Time{}
			rc.ids[d.Index] = ids
		}
		ids[d.ID] = now
	}
}

// of returns the ids of index found within ClaimVisibility of now,
// forgetting older ones.
func (rc *recentClaims) of(index string, now time.Time) []string {
	horizon := now.Add(-rc.visibility)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ids := rc.ids[index]
	out := make([]string, 0, len(ids))
	for id, at := range ids {
		if at.After(horizon) {
			out = append(out, id)
		} else {
			delete(ids, id)
		}
	}
	if len(ids) == 0 {
		delete(rc.ids, index)
	}
	return out
}

// forget forgets the documents found in index.
func (rc *recentClaims) forget(index string) {
	rc.mu.Lock()
	delete(rc.ids, index)
	rc.mu.Unlock()
}

// refreshCrowded refreshes the indices that remember more than max
// just-found documents, so their searches see those claims' flips or hold
// rows, and forgets the documents found before the refresh. A failed
// refresh is logged and changes nothing: the documents are forgotten with
// time.
func (rc *recentClaims) refreshCrowded(ctx context.Context, indices []string) {
	var crowded []string
	rc.mu.Lock()
	for _, idx := range indices {
		if len(rc.ids[idx]) > rc.max {
			crowded = append(crowded, idx)
		}
	}
	rc.mu.Unlock()
	if len(crowded) == 0 {
		return
	}
	before := rc.now()
	if err := rc.raw.Refresh(ctx, crowded...); err != nil {
		rc.logger.DebugContext(ctx, "refresh of indices with many just-claimed documents failed", "indices", crowded, "error", err)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, idx := range crowded {
		for id, at := range rc.ids[idx] {
			if at.Before(before) {
				delete(rc.ids[idx], id)
			}
		}
	}
}
