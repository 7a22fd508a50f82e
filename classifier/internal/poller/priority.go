package poller

import (
	"math"
	"strings"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/infrastructure/contentindex"
)

// Priorities: fresh news before an old backlog, urgent work before both,
// without starving anything.
//
// A document's level is one of the five of contentindex.Priorities
// (critical 100, high 80, normal 50, low 20, cleanup 10): its own
// `priority` field, or when it has none, the mark of its source (normal
// without a mark). A backfill or a reprocess run writes low.
//
// Each poll searches every index in two lanes, in the same _msearch:
//
//   - the fresh lane, (1 - BacklogShare) of the index's share, ranks pending
//     documents by a score: recency (a Gaussian decay on crawled_at: 1 when
//     just crawled, 0.5 at RecencyScale, about 0 beyond three scales), plus
//     0.001 so that old documents keep a place; times 1.2 for a substantive
//     document (word_count >= 150); times the weight of its level
//     (levelWeight: 10^8 critical, 10^4 high, 1 normal, 10^-4 low, 10^-8
//     cleanup), so every document of a level ranks before every document
//     of the levels below it. Ties go newest first. The raw index of a
//     source marked low or cleanup is searched in its fresh lane only for
//     the documents that name a level of normal or above themselves: the
//     rest of it waits in the backlog lane.
//   - the backlog lane, BacklogShare of the share (at least one document
//     when the share is two or more; with a share of one, one poll in
//     1/BacklogShare), takes the oldest pending documents whatever their
//     level: the oldest work always moves.
//
// The documents found are taken into the batch level by level, highest
// first, round-robin across the indices within a level, and submitted in
// that order. A critical document goes to the urgent queue whatever its
// age; a low or cleanup one never does.
//
// A low document therefore waits behind every normal one in the fresh lane
// but still advances through the backlog lane, and takes the whole share
// when nothing else is pending. A source marked low or cleanup gets the
// backlog lane of its index's share, and the rest of a batch only when no
// other index filled its share (Poller.fillLeftover). The mark is read per
// index (a raw index is one source), never sent as a list of sources: a
// search does not grow with the number of marks.

// Defaults of the priority settings.
const (
	BacklogShareDefault = 0.2
	RecencyScaleDefault = time.Hour
	// substantiveWeight and substantiveWords favour documents with text.
	substantiveWeight = 1.2
	substantiveWords  = 150
	// recencyFloor is added to the recency score so that old documents
	// keep a place.
	recencyFloor = 0.001
)

// priorities is the poller's job of choosing: how each index's share of a
// poll splits into lanes, how a lane ranks documents, which documents are
// urgent, and in which order a batch takes them.
type priorities struct {
	cfg *Config
	now func() time.Time
}

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

// levelWeight is the factor of a level in the fresh lane's score. A
// document scores between 0.001 and 1.2 times its level's weight, so a
// factor of 10^4 between levels puts every document of a level before
// every one of the level below (scores are 32-bit floats: 10^-11 to
// 1.2x10^8 are well inside their range).
func levelWeight(level string) float64 {
	switch level {
	case contentindex.PriorityCritical:
		return 1e8
	case contentindex.PriorityHigh:
		return 1e4
	case contentindex.PriorityLow:
		return 1e-4
	case contentindex.PriorityCleanup:
		return 1e-8
	}
	return 1
}

// notBelowNormal lists the levels a document of a low or cleanup source
// names to leave its source's level.
func notBelowNormal() []string {
	return []string{contentindex.PriorityCritical, contentindex.PriorityHigh, contentindex.PriorityNormal}
}

// pendingQuery is the search of lane l of an index whose source is at
// sourceLevel, leaving out the ids in exclude. The fresh lane ranks by
// level and recency (rank); the fresh lane of the index of a source below
// normal finds only the documents that name a level of normal or above;
// an urgent-only lane finds only what urgent sends to the urgent queue.
func (pr priorities) pendingQuery(l lane, sourceLevel string, exclude []string, now time.Time) rawindex.Pending {
	q := rawindex.Pending{From: l.from, Size: l.size, Exclude: exclude, WithHTML: pr.cfg.ReadRawHTML}
	if l.urgentOnly {
		q.Urgent = &rawindex.Urgent{Since: now.Add(-pr.cfg.UrgentAge), Unmarked: sourceLevel == contentindex.PriorityCritical}
		q.NotLevels = []string{contentindex.PriorityLow, contentindex.PriorityCleanup}
	}
	if (l.fresh || l.urgentOnly) && contentindex.PriorityBelowNormal(sourceLevel) {
		q.Levels = notBelowNormal()
	}
	if l.fresh {
		q.Rank = pr.rank(sourceLevel, now)
	}
	return q
}

// rank is the fresh lane's score (see the top of this file): a document
// that names no level has its source's.
func (pr priorities) rank(sourceLevel string, now time.Time) *rawindex.Rank {
	r := &rawindex.Rank{Origin: now, Scale: pr.cfg.RecencyScale, Floor: recencyFloor,
		Substantive: rawindex.Substantive{Words: substantiveWords, Weight: substantiveWeight},
		Unmarked:    levelWeight(sourceLevel)}
	for _, level := range contentindex.Priorities() {
		if w := levelWeight(level); w != 1 {
			r.Levels = append(r.Levels, rawindex.LevelWeight{Level: level, Weight: w})
		}
	}
	return r
}

// sourceLevel returns the level of the source of raw index idx: its mark,
// or normal.
func (pr priorities) sourceLevel(idx string) string {
	if pr.cfg.SourcePriority == nil {
		return contentindex.PriorityNormal
	}
	source, ok := strings.CutSuffix(idx, contentindex.RawSuffix)
	if !ok {
		return contentindex.PriorityNormal
	}
	if level := pr.cfg.SourcePriority(source); level != "" {
		return level
	}
	return contentindex.PriorityNormal
}

// lowIndex reports whether idx is the raw index of a source marked low or
// cleanup.
func (pr priorities) lowIndex(idx string) bool {
	return contentindex.PriorityBelowNormal(pr.sourceLevel(idx))
}

// level returns doc's level: its own, or its source's.
func (pr priorities) level(doc *domain.RawContent) string {
	if _, ok := contentindex.PriorityValue(doc.Priority); ok && doc.Priority != "" {
		return doc.Priority
	}
	return pr.sourceLevel(doc.Index)
}

// urgent reports whether doc goes to the urgent queue: at level critical,
// or crawled within UrgentAge at level normal or high.
func (pr priorities) urgent(doc *domain.RawContent) bool {
	switch pr.level(doc) {
	case contentindex.PriorityCritical:
		return true
	case contentindex.PriorityLow, contentindex.PriorityCleanup:
		return false
	}
	return !doc.CrawledAt.IsZero() && pr.now().Sub(doc.CrawledAt) <= pr.cfg.UrgentAge
}

// byLevel takes up to size of the pages' documents into a batch, level by
// level from critical down, round-robin across the indices within a level,
// so each index gets its share of every level and a higher level is never
// cut for a lower one.
func (pr priorities) byLevel(pages []page, size int) []*domain.RawContent {
	var docs []*domain.RawContent
	for _, level := range contentindex.Priorities() {
		var perIndex [][]*domain.RawContent
		most := 0
		for _, pg := range pages {
			var of []*domain.RawContent
			for _, d := range pg.docs {
				if pr.level(d) == level {
					of = append(of, d)
				}
			}
			perIndex = append(perIndex, of)
			most = max(most, len(of))
		}
		for round := 0; round < most && len(docs) < size; round++ {
			for _, of := range perIndex {
				if round < len(of) && len(docs) < size {
					docs = append(docs, of[round])
				}
			}
		}
	}
	return docs
}
