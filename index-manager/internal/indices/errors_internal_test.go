package indices

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/elastic/go-elasticsearch/v8/esapi"
)

func answer(status int, body string, header http.Header) *esapi.Response {
	return &esapi.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader(body))}
}

// A 429 is Elasticsearch's back-pressure (a full search queue, a tripped
// circuit breaker), not an outage: ErrBusy, which the API answers with 429
// and Retry-After; 408 and 504 stay ErrUnavailable.
func TestResponseErrorKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		want   error
	}{
		{429, `{"error":{"type":"es_rejected_execution_exception","reason":"rejected execution of search"},"status":429}`, ErrBusy},
		{429, `{"error":{"type":"circuit_breaking_exception","reason":"[parent] Data too large"},"status":429}`, ErrBusy},
		{408, `{}`, ErrUnavailable},
		{504, `{}`, ErrUnavailable},
		{503, `{"error":{"type":"search_phase_execution_exception","reason":"all shards failed"}}`, ErrUpstream},
		{400, `{"error":{"type":"parsing_exception","reason":"bad"}}`, ErrBadRequest},
		{404, `{"error":{"type":"index_not_found_exception","reason":"no such index"}}`, ErrNotFound},
	} {
		e := responseError("search", answer(tc.status, tc.body, nil))
		if !errors.Is(e, tc.want) {
			t.Errorf("%d %s: kind %v, want %v", tc.status, tc.body, e.Kind, tc.want)
		}
	}
}

// decodeNumbers with a budget refuses an answer past it, by its
// Content-Length before reading or while reading one without it (chunked),
// and decodes one within it, an answer of exactly the budget included.
func TestDecodeWithinBudget(t *testing.T) {
	t.Parallel()
	body := `{"took":1,"hits":{"total":{"value":2},"hits":[{"_id":"a"},{"_id":"b"}]}}`
	n := int64(len(body))
	withLength := http.Header{"Content-Length": []string{strconv.FormatInt(n, 10)}}
	for _, tc := range []struct {
		name   string
		header http.Header
		budget int64
		ok     bool
	}{
		{"no budget", nil, 0, true},
		{"exactly the budget", nil, n, true},
		{"exactly the budget, with its length", withLength, n, true},
		{"one byte over, chunked", nil, n - 1, false},
		{"one byte over, by its length", withLength, n - 1, false},
		{"far over, chunked", nil, 16, false},
	} {
		var sr searchResponse
		err := decodeNumbers("search", answer(200, body, tc.header), &sr, tc.budget)
		switch {
		case tc.ok && (err != nil || len(sr.Hits.Hits) != 2):
			t.Errorf("%s: %v, %d hits", tc.name, err, len(sr.Hits.Hits))
		case !tc.ok && !errors.Is(err, ErrTooLarge):
			t.Errorf("%s: %v, want ErrTooLarge", tc.name, err)
		}
	}
}
