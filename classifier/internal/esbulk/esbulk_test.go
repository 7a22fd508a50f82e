package esbulk

import (
	"net/http"
	"testing"

	"github.com/north-cloud/infrastructure/esclient"
)

// A 429 that says the request alone nearly fills the node's indexing-pressure
// budget is split like a 413; a busy node's 429 for a small request is not.
func TestIndexingPressureRefusalOfALargeRequestIsSplit(t *testing.T) {
	t.Parallel()
	big := &esclient.ResponseError{Status: http.StatusTooManyRequests, Body: `{"error":{"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation [coordinating_and_primary_bytes=1030666, replica_bytes=0, all_bytes=1030666, coordinating_operation_bytes=53320788, max_coordinating_bytes=53687091]"},"status":429}`}
	small := &esclient.ResponseError{Status: http.StatusTooManyRequests, Body: `{"error":{"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation [coordinating_and_primary_bytes=53000000, replica_bytes=0, all_bytes=53000000, coordinating_operation_bytes=120000, max_coordinating_bytes=53687091]"},"status":429}`}
	other := &esclient.ResponseError{Status: http.StatusTooManyRequests, Body: `{"error":{"type":"circuit_breaking_exception"},"status":429}`}
	for _, tc := range []struct {
		name string
		re   *esclient.ResponseError
		want bool
	}{{"large request", big, true}, {"small request on a busy node", small, false}, {"another 429", other, false}} {
		if got := tooLargeForIndexingPressure(tc.re); got != tc.want {
			t.Errorf("%s: split = %v, want %v", tc.name, got, tc.want)
		}
	}
}
