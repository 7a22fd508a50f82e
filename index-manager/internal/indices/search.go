package indices

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"
)

// PITKeepAlive is how long a documents cursor stays usable after each page.
const PITKeepAlive = "2m"

// Search is one search: Body is the search body without size, from,
// search_after, pit and timeout, which the fields below set.
type Search struct {
	// Body holds query, sort, _source and highlight.
	Body map[string]any
	Size int
	From int
	// Timeout is passed to Elasticsearch (partial results after it) and
	// also bounds the whole call.
	Timeout time.Duration
	// PIT, when set, searches that point in time instead of the index
	// (Elasticsearch rejects an index in the path then).
	PIT string
	// SearchAfter continues after the given sort values.
	SearchAfter []any
}

type searchResponse struct {
	Took  int    `json:"took"`
	PITID string `json:"pit_id"`
	Hits  struct {
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
}

// Search runs s against the index name (or s.PIT, opened on name).
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
	req := esapi.SearchRequest{}
	if s.PIT != "" {
		body["pit"] = map[string]any{"id": s.PIT, "keep_alive": PITKeepAlive}
	} else {
		req.Index = []string{name}
		req.ExpandWildcards = "none"
		req.AllowNoIndices = boolPtr(false)
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
	if err := decode(op, res, &sr); err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Total: sr.Hits.Total.Value, Took: sr.Took, Hits: make([]Hit, 0, len(sr.Hits.Hits)), PIT: sr.PITID}
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

// OpenPIT opens a point in time on exactly the index name.
func (st *Store) OpenPIT(ctx context.Context, name string) (string, error) {
	const op = "open point in time"
	res, err := st.do(ctx, op, esapi.OpenPointInTimeRequest{
		Index:           []string{name},
		KeepAlive:       PITKeepAlive,
		ExpandWildcards: "none",
	})
	if err != nil {
		return "", err
	}
	var body struct {
		ID string `json:"id"`
	}
	if err := decode(op, res, &body); err != nil {
		return "", err
	}
	return body.ID, nil
}

// ClosePIT releases a point in time early (after the last page); a PIT that
// is never closed expires after PITKeepAlive.
func (st *Store) ClosePIT(ctx context.Context, id string) error {
	b, err := json.Marshal(map[string]string{"id": id})
	if err != nil {
		return err
	}
	res, err := st.do(ctx, "close point in time", esapi.ClosePointInTimeRequest{Body: bytes.NewReader(b)})
	if err != nil {
		return err
	}
	discard(res)
	return nil
}
