package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
)

// TestQueryAggsAndSearchAfter: allowlisted aggregations come back as
// aggregations, search_after pages on a hit's sort values, and anything
// outside the allowlist is refused naming the path.
func TestQueryAggsAndSearchAfter(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_aggs_raw_content"
	b.createIndex(name)
	b.indexDocs(name, 30)
	path := "/api/v1/indices/" + name + "/_query"

	r := b.do(request{Method: "POST", Path: path, Body: map[string]any{
		"size": 0,
		"aggs": map[string]any{
			"by_status": map[string]any{"terms": map[string]any{"field": "classification_status", "size": 5},
				"aggs": map[string]any{"avg_words": map[string]any{"avg": map[string]any{"field": "word_count"}}}},
			"long": map[string]any{"filter": map[string]any{"range": map[string]any{"word_count": map[string]any{"gte": 20}}}},
		},
	}})
	if r.Status != http.StatusOK {
		t.Fatalf("aggs: %d %s", r.Status, r.Body)
	}
	var agg struct {
		Total        int64 `json:"total"`
		Aggregations struct {
			ByStatus struct {
				Buckets []struct {
					Key      string `json:"key"`
					DocCount int    `json:"doc_count"`
					AvgWords struct {
						Value float64 `json:"value"`
					} `json:"avg_words"`
				} `json:"buckets"`
			} `json:"by_status"`
			Long struct {
				DocCount int `json:"doc_count"`
			} `json:"long"`
		} `json:"aggregations"`
	}
	r.decode(t, &agg)
	bs := agg.Aggregations.ByStatus.Buckets
	if agg.Total != 30 || len(bs) != 1 || bs[0].Key != "pending" || bs[0].DocCount != 30 || bs[0].AvgWords.Value != 14.5 || agg.Aggregations.Long.DocCount != 10 {
		t.Fatalf("aggregations: %s", r.Body)
	}

	// Three pages of 12 by word_count desc, each after the last hit's sort values.
	var after []any
	seen := 0
	for page := 0; page < 3; page++ {
		body := map[string]any{"size": 12, "sort": []any{map[string]any{"field": "word_count", "order": "desc"}, map[string]any{"field": "id", "order": "asc"}}}
		if after != nil {
			body["search_after"] = after
		}
		r = b.do(request{Method: "POST", Path: path, Body: body})
		if r.Status != http.StatusOK {
			t.Fatalf("page %d: %d %s", page, r.Status, r.Body)
		}
		var res struct {
			Hits []struct {
				ID   string            `json:"_id"`
				Sort []json.RawMessage `json:"sort"`
			} `json:"hits"`
		}
		r.decode(t, &res)
		if len(res.Hits) == 0 {
			break
		}
		if want := "doc-" + strconv.Itoa(29-seen); res.Hits[0].ID != want {
			t.Fatalf("page %d starts at %s, want %s", page, res.Hits[0].ID, want)
		}
		seen += len(res.Hits)
		last := res.Hits[len(res.Hits)-1].Sort
		after = make([]any, len(last))
		for i, v := range last {
			after[i] = v
		}
	}
	if seen != 30 {
		t.Fatalf("search_after paged over %d documents, want 30", seen)
	}

	bad := map[string]string{
		"script in an aggregation":  `{"aggs":{"a":{"terms":{"script":"doc['x']"}}}}`,
		"unknown aggregation type":  `{"aggs":{"a":{"scripted_metric":{"map_script":"1"}}}}`,
		"terms size over 100":       `{"aggs":{"a":{"terms":{"field":"title","size":10000}}}}`,
		"sub-aggs of a metric":      `{"aggs":{"a":{"avg":{"field":"word_count"},"aggs":{"b":{"max":{"field":"word_count"}}}}}}`,
		"too deep":                  `{"aggs":{"a":{"terms":{"field":"id"},"aggs":{"b":{"terms":{"field":"id"},"aggs":{"c":{"terms":{"field":"id"},"aggs":{"d":{"max":{"field":"word_count"}}}}}}}}}}`,
		"a script query in filter":  `{"aggs":{"a":{"filter":{"script":{"script":"true"}}}}}`,
		"both interval kinds":       `{"aggs":{"a":{"date_histogram":{"field":"crawled_at","calendar_interval":"day","fixed_interval":"1d"}}}}`,
		"aggs and aggregations":     `{"aggs":{"a":{"max":{"field":"word_count"}}},"aggregations":{"b":{"max":{"field":"word_count"}}}}`,
		"search_after without sort": `{"search_after":[1]}`,
		"search_after with from":    `{"from":5,"sort":[{"field":"word_count"}],"search_after":[1]}`,
		"search_after too long":     `{"sort":[{"field":"word_count"}],"search_after":[1,"x"]}`,
		"search_after object":       `{"sort":[{"field":"word_count"}],"search_after":[{"a":1}]}`,
	}
	for what, body := range bad {
		r := b.do(request{Method: "POST", Path: path, Body: body})
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", what, r.Status, r.Body)
		}
	}
}
