package poller

import (
	"context"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/esclient"
)

// Claims are sent without a refresh: making each claim visible to search at
// once cost Elasticsearch a refresh of every polled index on every poll
// (tiny segments, then merges), its largest overhead per document. Until the
// index's next scheduled refresh (contentindex sets 1 s) a search still sees
// a just-claimed document as pending, at its old version. The poller
// remembers the documents it has just claimed, or just lost to another
// writer, and leaves them out of its index's searches for ClaimVisibility.
// Should a search still see one after that (a refresh delayed on a busy
// cluster), the claim's if_seq_no/if_primary_term makes the second claim
// fail with a conflict: it is lost, never won twice.

// recentClaimsMax bounds the just-claimed documents remembered per index
// (Poller.recentMax), and so the size of the search's must_not. Past it the
// poller refreshes the index itself (one request) and forgets the claims
// made before.
const recentClaimsMax = 4000

// noteFound remembers the documents a search found, from now: the claim
// that follows may not have reached Elasticsearch, let alone its index's
// refresh, when the next search runs.
func (p *Poller) noteFound(docs []*domain.RawContent) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range docs {
		p.noteLocked(d, now)
	}
}

func (p *Poller) noteLocked(d *domain.RawContent, now time.Time) {
	ids := p.recent[d.Index]
	if ids == nil {
		ids = map[string]time.Time{}
		p.recent[d.Index] = ids
	}
	ids[d.ID] = now
}

// recentIDs returns the ids of index claimed within ClaimVisibility of now,
// forgetting older ones.
func (p *Poller) recentIDs(index string, now time.Time) []string {
	horizon := now.Add(-p.cfg.ClaimVisibility)
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.recent[index]
	out := make([]string, 0, len(ids))
	for id, at := range ids {
		if at.After(horizon) {
			out = append(out, id)
		} else {
			delete(ids, id)
		}
	}
	if len(ids) == 0 {
		delete(p.recent, index)
	}
	return out
}

// refreshCrowded refreshes the indices that remember more than
// recentMax just-claimed documents, so their searches see those
// claims, and forgets the claims made before the refresh. A failed refresh
// is logged and changes nothing: the claims are forgotten with time.
func (p *Poller) refreshCrowded(ctx context.Context, indices []string) {
	var crowded []string
	p.mu.Lock()
	for _, idx := range indices {
		if len(p.recent[idx]) > p.recentMax {
			crowded = append(crowded, idx)
		}
	}
	p.mu.Unlock()
	if len(crowded) == 0 {
		return
	}
	before := p.now()
	res, err := p.es.Indices.Refresh(p.es.Indices.Refresh.WithContext(ctx), p.es.Indices.Refresh.WithIndex(crowded...),
		p.es.Indices.Refresh.WithIgnoreUnavailable(true))
	err = esclient.CheckResponse("refresh crowded raw indices", res, err)
	if err != nil {
		p.logger.DebugContext(ctx, "refresh of indices with many just-claimed documents failed", "indices", crowded, "error", err)
		return
	}
	res.Body.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, idx := range crowded {
		for id, at := range p.recent[idx] {
			if at.Before(before) {
				delete(p.recent[idx], id)
			}
		}
	}
}
