package indices

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/elastic/go-elasticsearch/v8/esapi"
)

// CountPattern counts the documents matching query (nil: every document)
// in the open indices a wildcard pattern names, in one request however many
// indices it expands to. No index matching is a count of 0.
func (s *Store) CountPattern(ctx context.Context, pattern string, query map[string]any) (int64, error) {
	const op = "count documents"
	req := esapi.CountRequest{
		Index:             []string{pattern},
		ExpandWildcards:   "open",
		AllowNoIndices:    boolPtr(true),
		IgnoreUnavailable: boolPtr(true),
	}
	if query != nil {
		b, err := json.Marshal(map[string]any{"query": query})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", op, err)
		}
		req.Body = bytes.NewReader(b)
	}
	res, err := s.do(ctx, op, req)
	if err != nil {
		return 0, err
	}
	var body struct {
		Count int64 `json:"count"`
	}
	if err := decode(op, res, &body); err != nil {
		return 0, err
	}
	return body.Count, nil
}
