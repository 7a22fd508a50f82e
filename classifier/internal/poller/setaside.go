package poller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/north-cloud/classifier/internal/fault"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/esclient"
)

// setAsideMax bounds the documents set aside per index, and so the size of
// the search's must_not.
const setAsideMax = 500

// A document whose claim Elasticsearch refuses for the document's own sake
// (404 document_missing: stored under a custom routing, or deleted; 400: an
// update the document cannot take) would otherwise be found again by every
// poll, first in its index's oldest-first order, and hide the newer
// documents behind it. It is set aside: left out of its index's searches
// for one claim lease, then tried again.

// isDocumentRefusal reports a claim refused for the document's own sake, as
// opposed to its index's (a write block, a missing index) or the cluster's
// (429, 5xx).
func isDocumentRefusal(err error) bool {
	var re *esclient.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	return fault.ElasticsearchItem(re.Status, re.Body) == fault.Document &&
		!strings.Contains(re.Body, "index_not_found_exception") && !strings.Contains(re.Body, "cluster_block_exception")
}

// setAside leaves the documents whose claims were refused for their own sake
// out of their index's searches until a claim lease has passed.
func (p *Poller) setAside(ctx context.Context, results []storage.ClaimResult) {
	now := p.now()
	until := now.Add(p.cfg.ClaimLease)
	for _, r := range results {
		if r.Err == nil || !isDocumentRefusal(r.Err) {
			continue
		}
		p.mu.Lock()
		ids := p.aside[r.Doc.Index]
		if ids == nil {
			ids = map[string]time.Time{}
			p.aside[r.Doc.Index] = ids
		}
		full := len(ids) >= setAsideMax
		if !full {
			ids[r.Doc.ID] = until
		}
		p.mu.Unlock()
		if full {
			p.logger.WarnContext(ctx, "document refused its claim; too many set aside in this index already",
				"index", r.Doc.Index, "content_id", r.Doc.ID, "error", r.Err)
			continue
		}
		p.logger.WarnContext(ctx, "document refused its claim: set aside so newer documents are not held behind it",
			"index", r.Doc.Index, "content_id", r.Doc.ID, "until", until.UTC().Format(time.RFC3339), "error", r.Err)
	}
}

// asideIDs returns the ids of index set aside now, dropping expired ones.
func (p *Poller) asideIDs(index string, now time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.aside[index]
	out := make([]string, 0, len(ids))
	for id, until := range ids {
		if now.Before(until) {
			out = append(out, id)
		} else {
			delete(ids, id)
		}
	}
	if len(ids) == 0 {
		delete(p.aside, index)
	}
	slices.Sort(out)
	return out
}
