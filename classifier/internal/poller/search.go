package poller

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawindex"
)

// searcher is the poller's job of searching: one multi-search of the due
// indices in their lanes (leaving out the documents under a live claim or
// just found), and a second one that gives the room the indices left in
// the batch to those that filled their share.
type searcher struct {
	cfg    *Config
	prio   priorities
	watch  *indexWatch
	recent *recentClaims
	// outcome tells the Elasticsearch breaker how a search went.
	outcome func(ctx context.Context, err error)
	logger  *slog.Logger
	now     func() time.Time
}

// fillLeftover gives the room the indices left in the batch to those that
// filled their share: one more search of them, each for its part of the
// rest, so that one source's backlog still fills whole batches while the
// others are idle. The second search continues the fresh lane after its
// first fresh documents. An index of a source marked low fills its share
// when its backlog lane is full, and gets the room only when no normal
// index filled its share; its second search continues its backlog lane. It
// reports whether an index may have more waiting.
func (s *searcher) fillLeftover(ctx context.Context, pages []page, share, fresh, backlog, size int) bool {
	total := 0
	var full, fullLow []int
	for i, pg := range pages {
		total += len(pg.docs)
		switch {
		case pg.err != "":
		case s.prio.lowIndex(pg.index) && len(pg.docs) >= backlog:
			fullLow = append(fullLow, i)
		case len(pg.docs) >= share:
			full = append(full, i)
		}
	}
	left := size - total
	next := lane{from: fresh, fresh: true}
	if len(full) == 0 {
		full, next = fullLow, lane{from: backlog}
	}
	if len(full) == 0 || left <= 0 {
		return len(full) > 0 || len(fullLow) > 0
	}
	extra := ceilDiv(left, len(full))
	next.size = extra
	names := make([]string, len(full))
	for j, i := range full {
		names[j] = pages[i].index
	}
	more, err := s.search(ctx, names, []lane{next}, false)
	s.outcome(ctx, err)
	if err != nil {
		// The first round's documents are still worth claiming.
		s.logger.DebugContext(ctx, "second search for the rest of the batch failed", "error", err)
		return true
	}
	waiting := len(fullLow) > 0 && next.fresh
	for j, i := range full {
		seen := make(map[string]bool, len(pages[i].docs))
		for _, d := range pages[i].docs {
			seen[d.ID] = true
		}
		for _, d := range more[j].docs {
			if !seen[d.ID] { // documents may have moved between the two searches
				pages[i].docs = append(pages[i].docs, d)
			}
		}
		waiting = waiting || len(more[j].docs) >= extra
	}
	return waiting
}

// page is one index's answer in a multi-search.
type page struct {
	index string
	docs  []*domain.RawContent
	err   string // the index's search failed
}

// lane is one ranked search of an index: the fresh lane ranks pending
// documents by priority, the backlog lane takes the oldest (priority.go).
type lane struct {
	from, size int
	fresh      bool
	urgentOnly bool // only documents that are urgent (priority.go)
}

// searchLanes searches every index in its fresh and backlog lanes; with
// urgentOnly the fresh lane keeps only urgent documents.
func (s *searcher) searchLanes(ctx context.Context, indices []string, fresh, backlog int, urgentOnly bool) ([]page, error) {
	var lanes []lane
	if fresh > 0 {
		lanes = append(lanes, lane{size: fresh, fresh: true, urgentOnly: urgentOnly})
	}
	if backlog > 0 {
		lanes = append(lanes, lane{size: backlog})
	}
	return s.search(ctx, indices, lanes, true)
}

// search sends one multi-search with one search per index and lane
// (rawindex.SearchPending). An index's page holds its lanes' documents in
// lane order, each once. An index whose search fails is reported in its
// page, and marked failing when mark is set; the error is that of the
// request as a whole.
func (s *searcher) search(ctx context.Context, indices []string, lanes []lane, mark bool) ([]page, error) {
	live, err := s.cfg.Leases.Live(ctx, indices)
	if err != nil {
		return nil, fmt.Errorf("search pending: %w", err)
	}
	now := s.now()
	searches := make([]rawindex.Search, 0, len(indices)*len(lanes))
	for _, idx := range indices {
		exclude := append(s.recent.of(idx, now), live[idx]...)
		level := s.prio.sourceLevel(idx)
		for _, l := range lanes {
			searches = append(searches, rawindex.Search{Index: idx, Query: s.prio.pendingQuery(l, level, exclude, now)})
		}
	}
	answers, err := s.cfg.Raw.SearchPending(ctx, searches)
	if err != nil {
		return nil, err
	}
	pages := make([]page, len(indices))
	for i, idx := range indices {
		pages[i].index = idx
		seen := map[string]bool{}
		for j := range lanes {
			a := answers[i*len(lanes)+j]
			switch {
			case a.Failed() && a.Status == http.StatusTooManyRequests:
				// The cluster is busy; the index is not at fault.
				pages[i].err = "busy"
			case a.Failed() && a.Status == http.StatusNotFound:
				// Deleted since it was listed: list again.
				pages[i].err = "gone"
				s.watch.invalidate()
			case a.Failed():
				pages[i].err = fmt.Sprintf("search failed (status %d): %s", a.Status, a.Err)
				if mark {
					s.watch.markFailing(ctx, idx, ReasonSearch, pages[i].err)
				}
			default:
				for _, d := range a.Docs {
					if !seen[d.ID] {
						seen[d.ID] = true
						pages[i].docs = append(pages[i].docs, d)
					}
				}
				continue
			}
			pages[i].docs = nil // a lane that failed fails the index's page
			break
		}
	}
	return pages, nil
}
