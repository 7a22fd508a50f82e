package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/api"
)

// BenchmarkListIndices200 measures GET /api/v1/indices with 200 indices of
// its own present (besides whatever else the cluster holds): p50 and p99
// latency over 200 requests, and the Elasticsearch requests one list call
// makes, counted on the client's transport. It sizes its own workload, so
// it is meant to run with -benchtime 1x (scripts/bench.sh).
func BenchmarkListIndices200(b *testing.B) {
	const (
		numIndices  = 200
		numRequests = 200
		workers     = 8
	)
	bd := setup(b, options{})
	names := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for n := range names {
				bd.createIndex(n)
			}
		})
	}
	for i := range numIndices {
		suffix := "_raw_content"
		if i%2 == 1 {
			suffix = "_classified_content"
		}
		names <- fmt.Sprintf("%s_b%03d%s", bd.prefix, i, suffix)
	}
	close(names)
	wg.Wait()

	get := func() (*httptest.ResponseRecorder, time.Duration) {
		req := httptest.NewRequest("GET", "/api/v1/indices", nil)
		req.Header.Set("Authorization", "Bearer "+bd.token)
		w := httptest.NewRecorder()
		start := time.Now()
		bd.router.ServeHTTP(w, req)
		return w, time.Since(start)
	}
	// One checked call: all 200 are listed, with one request to Elasticsearch.
	bd.rec.reset()
	w, _ := get()
	esRequests, _ := bd.rec.snapshot()
	if w.Code != http.StatusOK {
		b.Fatalf("list: %d %s", w.Code, w.Body)
	}
	var list api.IndexListResponse
	response{Body: w.Body.Bytes()}.decode(b, &list)
	mine := 0
	for _, s := range list.Indices {
		if len(s.Name) > len(bd.prefix) && s.Name[:len(bd.prefix)] == bd.prefix {
			mine++
		}
	}
	if mine != numIndices {
		b.Fatalf("listed %d of the benchmark's %d indices", mine, numIndices)
	}

	b.ResetTimer()
	for range b.N {
		bd.rec.reset()
		lat := make([]time.Duration, 0, numRequests)
		for range numRequests {
			w, d := get()
			if w.Code != http.StatusOK {
				b.Fatalf("list: %d", w.Code)
			}
			lat = append(lat, d)
		}
		total, _ := bd.rec.snapshot()
		slices.Sort(lat)
		b.ReportMetric(ms(lat[len(lat)/2]), "p50_ms")
		b.ReportMetric(ms(lat[(len(lat)*99+99)/100-1]), "p99_ms")
		b.ReportMetric(float64(total)/numRequests, "es_requests/list")
	}
	b.ReportMetric(float64(esRequests), "es_requests_first_list")
	b.ReportMetric(float64(len(list.Indices)), "indices_listed")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
