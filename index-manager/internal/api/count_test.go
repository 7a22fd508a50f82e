package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/north-cloud/index-manager/internal/api"
)

// One request counts every content index of a type, however many there
// are: the Overview's "classified in the last hour" no longer grows with
// the number of sources.
func TestCountContentCountsEveryIndexOfATypeInOneRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	for name, n := range map[string]int{"a_raw_content": 3, "b_raw_content": 4, "a_classified_content": 2} {
		b.createIndex(b.prefix + name)
		b.indexDocs(b.prefix+name, n)
	}
	count := func(params url.Values) (int, api.CountResponse, int) {
		t.Helper()
		b.rec.reset()
		r := b.do(request{Method: "GET", Path: "/api/v1/content/_count?" + params.Encode()})
		var out api.CountResponse
		if r.Status == http.StatusOK {
			r.decode(t, &out)
		}
		n, _ := b.rec.snapshot()
		return r.Status, out, n
	}
	for _, c := range []struct {
		params url.Values
		want   int64
	}{
		{url.Values{"index_type": {"raw_content"}, "prefix": {b.prefix}}, 7},
		{url.Values{"index_type": {"classified_content"}, "prefix": {b.prefix}}, 2},
		{url.Values{"index_type": {"raw_content"}, "prefix": {b.prefix}, "field": {"crawled_at"}, "gte": {"2026-11-25T00:00:00Z"}}, 7},
		{url.Values{"index_type": {"raw_content"}, "prefix": {b.prefix}, "field": {"crawled_at"}, "gte": {"2026-11-26T00:00:00Z"}}, 0},
		{url.Values{"index_type": {"raw_content"}, "prefix": {b.prefix + "b"}, "field": {"crawled_at"}, "gte": {"now-3650d/d"}}, 4},
		{url.Values{"index_type": {"raw_content"}, "prefix": {b.prefix + "zz"}}, 0},
	} {
		status, out, requests := count(c.params)
		if status != http.StatusOK || out.Count != c.want {
			t.Errorf("count %v = %d %+v, want %d", c.params, status, out, c.want)
		}
		if requests != 1 {
			t.Errorf("count %v made %d Elasticsearch requests, want 1", c.params, requests)
		}
		if !strings.HasSuffix(out.Pattern, "_"+c.params.Get("index_type")) {
			t.Errorf("pattern %q", out.Pattern)
		}
	}
	for _, bad := range []url.Values{
		{}, {"index_type": {"other"}}, {"index_type": {"raw_content"}, "prefix": {"x*"}},
		{"index_type": {"raw_content"}, "field": {"raw_text"}, "gte": {"now-1h"}},
		{"index_type": {"raw_content"}, "field": {"crawled_at"}},
		{"index_type": {"raw_content"}, "field": {"crawled_at"}, "gte": {"yesterday"}},
	} {
		if status, _, _ := count(bad); status != http.StatusBadRequest {
			t.Errorf("count %v = %d, want 400", bad, status)
		}
	}
}
