package api_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestQuery(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_q_raw_content"
	b.createIndex(name)
	b.indexDocs(name, 30)
	path := "/api/v1/indices/" + name + "/_query"

	b.rec.reset()
	r := b.do(request{Method: "POST", Path: path, Body: map[string]any{
		"query":     map[string]any{"bool": map[string]any{"filter": []any{map[string]any{"range": map[string]any{"word_count": map[string]any{"gte": 10}}}}, "must": []any{map[string]any{"match": map[string]any{"title": "crime"}}}}},
		"size":      5,
		"from":      2,
		"sort":      []any{map[string]any{"field": "word_count", "order": "desc"}},
		"_source":   []string{"id", "title", "word_count"},
		"highlight": map[string]any{"fields": map[string]any{"title": map[string]any{}}},
	}})
	if r.Status != http.StatusOK {
		t.Fatalf("query: %d %s", r.Status, r.Body)
	}
	var res struct {
		Total int64 `json:"total"`
		Hits  []struct {
			ID        string              `json:"_id"`
			Source    map[string]any      `json:"_source"`
			Highlight map[string][]string `json:"highlight"`
		} `json:"hits"`
	}
	r.decode(t, &res)
	if res.Total != 20 || len(res.Hits) != 5 || res.Hits[0].ID != "doc-27" || res.Hits[0].Source["raw_text"] != nil || len(res.Hits[0].Highlight["title"]) == 0 {
		t.Fatalf("query result: %s", r.Body)
	}
	_, reqs := b.rec.snapshot()
	if len(reqs) != 1 || !strings.Contains(reqs[0], `"timeout":"10000ms"`) {
		t.Fatalf("the search sent no timeout: %v", reqs)
	}
	// An empty body object is a match_all with the default size.
	r = b.do(request{Method: "POST", Path: path, Body: `{}`})
	r.decode(t, &res)
	if r.Status != http.StatusOK || res.Total != 30 || len(res.Hits) != 10 {
		t.Fatalf("default query: %d %s", r.Status, r.Body)
	}

	bad := map[string]string{
		"size over 100":          `{"size":101}`,
		"negative size":          `{"size":-1}`,
		"negative from":          `{"from":-5}`,
		"from+size over 10000":   `{"from":9950,"size":100}`,
		"deep from":              `{"from":20000,"size":1}`,
		"script query":           `{"query":{"script":{"script":{"source":"doc['word_count'].value > 1"}}}}`,
		"nested script_score":    `{"query":{"bool":{"should":[{"function_score":{"query":{"match_all":{}},"functions":[{"script_score":{"script":"1"}}]}}]}}}`,
		"script in a filter":     `{"query":{"bool":{"filter":{"bool":{"must":[{"script":{"script":"true"}}]}}}}}`,
		"script in highlight":    `{"highlight":{"fields":{"title":{"highlight_query":{"script":{"script":"1"}}}}}}`,
		"wrapper":                `{"query":{"wrapper":{"query":"eyJtYXRjaF9hbGwiOnt9fQ=="}}}`,
		"terms lookup elsewhere": `{"query":{"terms":{"id":{"index":".security","id":"x","path":"p"}}}}`,
		"mlt elsewhere":          `{"query":{"more_like_this":{"fields":["title"],"like":[{"_index":".kibana","_id":"1"}]}}}`,
		"script_fields":          `{"script_fields":{"x":{"script":"1"}}}`,
		"runtime_mappings":       `{"runtime_mappings":{"x":{"type":"long","script":"emit(1)"}}}`,
		"aggregations":           `{"aggs":{"x":{"scripted_metric":{}}}}`,
		"script sort":            `{"sort":[{"field":"_script","order":"asc"}]}`,
		"bad sort order":         `{"sort":[{"field":"word_count","order":"up"}]}`,
		"bad _source":            `{"_source":["{\"a\":1}"]}`,
		"malformed JSON":         `{"query":`,
		"wrong type":             `{"size":"ten"}`,
		"unknown query":          `{"query":{"no_such_query":{}}}`,
		"deeply nested":          `{"query":` + strings.Repeat(`{"bool":{"must":`, 70) + `{}` + strings.Repeat(`}}`, 70) + `}`,
	}
	for what, body := range bad {
		r := b.do(request{Method: "POST", Path: path, Body: body})
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", what, r.Status, r.Body)
		}
	}
	if r := b.do(request{Method: "POST", Path: path, Body: `{"query":{"match_all":{}},"pad":"` + strings.Repeat("x", maxBody) + `"}`}); r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized query: %d, want 413", r.Status)
	}
}
