package indices

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"
)

// Search is one search of one concrete index: Body is the search body
// without size, from, search_after and timeout, which the fields below set.
// No search opens a point in time or a scroll, so no search context
// outlives its request.
type Search struct {
	// Body holds query, sort, _source and highlight.
	Body map[string]any
	Size int
	From int
	// Timeout is passed to Elasticsearch (partial results after it) and
	// also bounds the whole call.
	Timeout time.Duration
	// SearchAfter continues after the given sort values.
	SearchAfter []any
	// Read bounds the answer; its Exclude goes beside Body's _source
	// includes.
	Read
}

type searchResponse struct {
	Took int `json:"took"`
	Hits struct {
		Total struct {
			Value int64 `json:"value"`
		} `json:"total"`
		MaxScore *float64 `json:"max_score"`
		Hits     []struct {
			Index     string              `json:"_index"`
			ID        string              `json:"_id"`
			Score     *float64            `json:"_score"`
			Source    map[string]any      `json:"_source"`
			Highlight map[string][]string `json:"highlight"`
			Sort      []any               `json:"sort"`
		} `json:"hits"`
	} `json:"hits"`
	Aggregations map[string]any `json:"aggregations"`
}

// Search runs s against the index name.
func (st *Store) Search(ctx context.Context, name string, s Search) (SearchResult, error) {
	const op = "search"
	body := make(map[string]any, len(s.Body)+6)
	for k, v := range s.Body {
		body[k] = v
	}
	body["size"] = s.Size
	if s.From > 0 {
		body["from"] = s.From
	}
	body["track_total_hits"] = true
	if s.Timeout > 0 {
		body["timeout"] = fmt.Sprintf("%dms", s.Timeout.Milliseconds())
		var cancel context.CancelFunc
		// Elasticsearch's timeout is best effort (it is checked between
		// segments); the context bounds the call for certain.
		ctx, cancel = context.WithTimeout(ctx, s.Timeout+5*time.Second)
		defer cancel()
	}
	if len(s.SearchAfter) > 0 {
		body["search_after"] = s.SearchAfter
	}
	if len(s.Exclude) > 0 {
		src := map[string]any{"excludes": s.Exclude}
		if inc, ok := body["_source"]; ok {
			src["includes"] = inc
		}
		body["_source"] = src
	}
	req := esapi.SearchRequest{
		Index:           []string{name},
		ExpandWildcards: "none",
		AllowNoIndices:  boolPtr(false),
	}
	b, err := json.Marshal(body)
	if err != nil {
		return SearchResult{}, fmt.Errorf("%s: %w", op, err)
	}
	req.Body = bytes.NewReader(b)
	res, err := st.do(ctx, op, req)
	if err != nil {
		return SearchResult{}, err
	}
	var sr searchResponse
	// Numbers as json.Number: sort values of long fields (and the
	// Long.MAX_VALUE Elasticsearch gives a missing value) survive the
	// round trip through a cursor exactly.
	if err := decodeNumbers(op, res, &sr, s.MaxBytes); err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Total: sr.Hits.Total.Value, Took: sr.Took, Hits: make([]Hit, 0, len(sr.Hits.Hits)), Aggregations: sr.Aggregations}
	if sr.Hits.MaxScore != nil {
		out.MaxScore = *sr.Hits.MaxScore
	}
	for _, h := range sr.Hits.Hits {
		// An alias with a content index's name could point anywhere: only
		// documents of the named index itself are ever returned.
		if h.Index != name {
			return SearchResult{}, &Error{Op: op, Kind: ErrNotFound, Reason: "no such index [" + name + "] (it is an alias or a pattern)"}
		}
		hit := Hit{ID: h.ID, Source: nonNil(h.Source), Highlight: h.Highlight, Sort: h.Sort}
		if h.Score != nil {
			hit.Score = *h.Score
		}
		out.Hits = append(out.Hits, hit)
	}
	return out, nil
}
