package poller

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
)

// Priorities: fresh news before an old backlog, without starving it.
//
// Each poll searches every index in two lanes, in the same _msearch:
//
//   - the fresh lane, (1 - BacklogShare) of the index's share, ranks pending
//     documents by a score: recency (a Gaussian decay on crawled_at: 1 when
//     just crawled, 0.5 at RecencyScale, about 0 beyond three scales), plus
//     0.001 so that old documents keep a place; times 1.2 for a substantive
//     document (word_count >= 150); times 0.000001 for a low-priority one
//     (priority "low": a backfill or a reprocess run). Ties go newest
//     first. The raw index of a source marked low has no fresh lane (nor
//     urgent documents): it is searched in the backlog lane only.
//   - the backlog lane, BacklogShare of the share (at least one document
//     when the share is two or more; with a share of one, one poll in
//     1/BacklogShare), takes the oldest pending documents whatever their
//     priority: the oldest work always moves.
//
// A low-priority document therefore waits behind every normal one in the
// fresh lane but still advances through the backlog lane, and takes the
// whole share when nothing else is pending. A source marked low gets the
// backlog lane of its index's share, and the rest of a batch only when no
// normal index filled its share (Poller.fillLeftover). The mark is read per
// index (a raw index is one source), never sent as a list of sources: a
// search does not grow with the number of marks.

// Defaults of the priority settings.
const (
	BacklogShareDefault = 0.2
	RecencyScaleDefault = time.Hour
	// lowPriorityWeight puts a low-priority document behind every normal
	// one: a normal document scores at least 0.001.
	lowPriorityWeight = 0.000001
	// substantiveWeight and substantiveWords favour documents with text.
	substantiveWeight = 1.2
	substantiveWords  = 150
)

// lanes returns the sizes of the fresh and backlog lanes for share
// documents of one index on poll number n.
func (c *Config) lanes(share int, n uint64) (fresh, backlog int) {
	if c.BacklogShare <= 0 || c.BacklogShare >= 1 {
		return 0, share // no priorities: oldest first
	}
	if share == 1 {
		every := uint64(math.Ceil(1 / c.BacklogShare))
		if n%every == 0 {
			return 0, 1
		}
		return 1, 0
	}
	backlog = max(1, int(math.Round(float64(share)*c.BacklogShare)))
	return share - backlog, backlog
}

// freshOrder turns a pending-documents query into the fresh lane's: the
// same documents ranked by priority. The fresh lane of a low index (its
// source marked low) finds nothing.
func (p *Poller) freshOrder(q map[string]any, low bool) map[string]any {
	if low {
		q["query"] = map[string]any{"match_none": map[string]any{}}
		return q
	}
	recency := map[string]any{"function_score": map[string]any{
		"query": q["query"],
		"functions": []any{
			map[string]any{"gauss": map[string]any{"crawled_at": map[string]any{
				"origin": p.now().UTC().Format(time.RFC3339), "scale": fmt.Sprintf("%dms", p.cfg.RecencyScale.Milliseconds()), "decay": 0.5,
			}}},
			map[string]any{"weight": 0.001},
		},
		"score_mode": "sum", "boost_mode": "replace",
	}}
	factors := []any{
		map[string]any{"filter": map[string]any{"term": map[string]any{"priority": contentindex.PriorityLow}}, "weight": lowPriorityWeight},
		map[string]any{"filter": map[string]any{"range": map[string]any{"word_count": map[string]any{"gte": substantiveWords}}}, "weight": substantiveWeight},
	}
	q["query"] = map[string]any{"function_score": map[string]any{
		"query": recency, "functions": factors, "score_mode": "multiply", "boost_mode": "multiply",
	}}
	q["sort"] = []any{
		map[string]any{"_score": map[string]any{"order": "desc"}},
		map[string]any{"crawled_at": map[string]any{"order": "desc", "unmapped_type": "date", "numeric_type": "date"}},
	}
	return q
}

// lowIndex reports whether idx is the raw index of a source marked low.
func (p *Poller) lowIndex(idx string) bool {
	if p.cfg.LowSource == nil {
		return false
	}
	source, ok := strings.CutSuffix(idx, contentindex.RawSuffix)
	return ok && p.cfg.LowSource(source)
}

// urgent reports whether doc goes to the urgent queue: crawled within
// UrgentAge and neither it nor its index's source low priority.
func (p *Poller) urgent(doc *domain.RawContent) bool {
	if doc.Priority == contentindex.PriorityLow || p.lowIndex(doc.Index) {
		return false
	}
	return !doc.CrawledAt.IsZero() && p.now().Sub(doc.CrawledAt) <= p.cfg.UrgentAge
}

// onlyUrgent narrows a pending-documents query to urgent documents (the
// fresh lane of a low index finds none: freshOrder).
func (p *Poller) onlyUrgent(q map[string]any) {
	b := q["query"].(map[string]any)["bool"].(map[string]any)
	since := p.now().Add(-p.cfg.UrgentAge).UTC().Format(time.RFC3339)
	b["filter"] = append(asSlice(b["filter"]), map[string]any{"range": map[string]any{"crawled_at": map[string]any{"gte": since}}})
	b["must_not"] = append(asSlice(b["must_not"]), map[string]any{"term": map[string]any{"priority": contentindex.PriorityLow}})
}

func asSlice(v any) []any {
	if s, ok := v.([]any); ok {
		return s
	}
	return nil
}
