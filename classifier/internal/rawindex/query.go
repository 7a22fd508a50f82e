package rawindex

import (
	"fmt"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
)

// Pending is a search of one raw index for documents waiting to be
// classified: pending, or processing (a claim an older replica wrote to
// the raw document; claims now live in the lease table, and Exclude leaves
// out those with a live lease). It is a value: the poller fills in what it
// wants, and render turns it into the query in one place.
//
// Without Rank the oldest come first (crawled_at ascending); a crawled_at
// that is not a date fails the search of its own index (numeric_type)
// rather than sorting as text.
type Pending struct {
	// From and Size page the results.
	From, Size int
	// Exclude lists _ids left out: documents just claimed, or
	// under a live lease.
	Exclude []string
	// WithHTML reads raw_html too. The document is then read whole, and a
	// Flip of it is sent as the whole document; without it the read leaves
	// raw_html out and a Flip is a partial update.
	WithHTML bool
	// Levels, when set, keeps only the documents whose priority field is
	// one of them.
	Levels []string
	// NotLevels leaves out the documents whose priority is one of them.
	NotLevels []string
	// Urgent, when set, keeps only the documents that are urgent.
	Urgent *Urgent
	// Rank, when set, ranks the documents by score (Rank), newest first
	// among equals.
	Rank *Rank
}

// Urgent narrows a search to urgent documents: crawled since Since, or of
// priority critical, or (Unmarked) naming no priority at all, for an index
// whose source is critical.
type Urgent struct {
	Since    time.Time
	Unmarked bool
}

// Rank scores each document: recency (a Gaussian decay on crawled_at, 1 at
// Origin and 0.5 at Scale) plus Floor, so old documents keep a place;
// times Substantive.Weight for a document of at least Substantive.Words
// words; times the weight of its priority level (Levels), or Unmarked for a
// document that names none (0 or 1: no factor).
type Rank struct {
	Origin      time.Time
	Scale       time.Duration
	Floor       float64
	Substantive Substantive
	Levels      []LevelWeight
	Unmarked    float64
}

// Substantive favours documents with text.
type Substantive struct {
	Words  int
	Weight float64
}

// LevelWeight is the factor of one priority level in a Rank.
type LevelWeight struct {
	Level  string
	Weight float64
}

// render returns the search body of q.
func (q Pending) render() map[string]any {
	status := []any{
		term("classification_status", contentindex.StatusPending),
		term("classification_status", contentindex.StatusProcessing),
	}
	var filter, mustNot []any
	if q.Urgent != nil {
		when := []any{
			map[string]any{"range": map[string]any{"crawled_at": map[string]any{"gte": q.Urgent.Since.UTC().Format(time.RFC3339)}}},
			term("priority", contentindex.PriorityCritical),
		}
		if q.Urgent.Unmarked {
			when = append(when, noPriority())
		}
		filter = append(filter, map[string]any{"bool": map[string]any{"should": when, "minimum_should_match": 1}})
	}
	if len(q.Levels) > 0 {
		filter = append(filter, map[string]any{"terms": map[string]any{"priority": q.Levels}})
	}
	if len(q.Exclude) > 0 {
		mustNot = append(mustNot, map[string]any{"ids": map[string]any{"values": q.Exclude}})
	}
	if len(q.NotLevels) > 0 {
		mustNot = append(mustNot, map[string]any{"terms": map[string]any{"priority": q.NotLevels}})
	}
	b := map[string]any{"minimum_should_match": 1, "should": status}
	if filter != nil {
		b["filter"] = filter
	}
	if mustNot != nil {
		b["must_not"] = mustNot
	}
	var query any = map[string]any{"bool": b}
	sort := []any{crawledAt("asc")}
	if q.Rank != nil {
		query = q.Rank.wrap(query)
		sort = []any{map[string]any{"_score": map[string]any{"order": "desc"}}, crawledAt("desc")}
	}
	body := map[string]any{
		"from":                q.From,
		"size":                q.Size,
		"seq_no_primary_term": true,
		"sort":                sort,
		"query":               query,
	}
	if !q.WithHTML {
		body["_source"] = map[string]any{"excludes": []string{"raw_html"}}
	}
	return body
}

// wrap scores the documents query matches.
func (r Rank) wrap(query any) map[string]any {
	recency := map[string]any{"function_score": map[string]any{
		"query": query,
		"functions": []any{
			map[string]any{"gauss": map[string]any{"crawled_at": map[string]any{
				"origin": r.Origin.UTC().Format(time.RFC3339), "scale": fmt.Sprintf("%dms", r.Scale.Milliseconds()), "decay": 0.5,
			}}},
			map[string]any{"weight": r.Floor},
		},
		"score_mode": "sum", "boost_mode": "replace",
	}}
	factors := []any{map[string]any{
		"filter": map[string]any{"range": map[string]any{"word_count": map[string]any{"gte": r.Substantive.Words}}},
		"weight": r.Substantive.Weight,
	}}
	for _, l := range r.Levels {
		factors = append(factors, map[string]any{"filter": term("priority", l.Level), "weight": l.Weight})
	}
	if r.Unmarked != 0 && r.Unmarked != 1 {
		factors = append(factors, map[string]any{"filter": noPriority(), "weight": r.Unmarked})
	}
	return map[string]any{"function_score": map[string]any{
		"query": recency, "functions": factors, "score_mode": "multiply", "boost_mode": "multiply",
	}}
}

func term(field string, value any) map[string]any {
	return map[string]any{"term": map[string]any{field: value}}
}

// noPriority matches the documents that name no priority.
func noPriority() map[string]any {
	return map[string]any{"bool": map[string]any{"must_not": []any{map[string]any{"exists": map[string]any{"field": "priority"}}}}}
}

// crawledAt sorts by crawled_at in order.
func crawledAt(order string) map[string]any {
	return map[string]any{"crawled_at": map[string]any{"order": order, "unmapped_type": "date", "numeric_type": "date"}}
}
