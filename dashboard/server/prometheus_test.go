package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	server "github.com/north-cloud/dashboard-server"
)

// TestPrometheusProxy: query_range and query reach Prometheus with only
// their own parameters; other paths, huge ranges and too many points are
// refused before; without PROMETHEUS_URL the proxy says so.
func TestPrometheusProxy(t *testing.T) {
	var seen []string
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
	}))
	defer prom.Close()
	dist := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dist, "index.html"), []byte("<html></html>"), 0o644))
	start := func(promURL string) *httptest.Server {
		h, err := server.New(server.Config{Dist: dist, PrometheusURL: promURL}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		must(t, err)
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		return s
	}
	srv := start(prom.URL)
	get := func(s *httptest.Server, p string) (int, string) {
		res, err := http.Get(s.URL + p)
		must(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	q := url.Values{"query": {`sum(classifier_queue_depth)`}, "start": {"1700000000"}, "end": {"1700003600"}, "step": {"15"}, "extra": {"x"}}
	if code, body := get(srv, "/api/prometheus/api/v1/query_range?"+q.Encode()); code != 200 || !strings.Contains(body, `"success"`) {
		t.Fatalf("query_range: %d %s", code, body)
	}
	if len(seen) != 1 || !strings.HasPrefix(seen[0], "/api/v1/query_range?") || strings.Contains(seen[0], "extra") || !strings.Contains(seen[0], "step=15") {
		t.Fatalf("Prometheus saw %v", seen)
	}
	if code, _ := get(srv, "/api/prometheus/api/v1/query?query=up"); code != 200 {
		t.Fatalf("query: %d", code)
	}
	for what, p := range map[string]string{
		"another endpoint": "/api/prometheus/api/v1/series?query=up",
		"admin API":        "/api/prometheus/api/v1/admin/tsdb/delete_series?match[]=up",
		"no query":         "/api/prometheus/api/v1/query_range?start=1&end=2&step=1",
		"over a week":      "/api/prometheus/api/v1/query_range?query=up&start=1700000000&end=1701000000&step=3600",
		"too many points":  "/api/prometheus/api/v1/query_range?query=up&start=1700000000&end=1700100000&step=1",
		"end before start": "/api/prometheus/api/v1/query_range?query=up&start=1700000100&end=1700000000&step=1",
	} {
		if code, body := get(srv, p); code < 400 || code >= 500 {
			t.Errorf("%s: %d %s, want 4xx", what, code, body)
		}
	}
	if len(seen) != 2 {
		t.Fatalf("refused requests reached Prometheus: %v", seen)
	}
	if code, body := get(start(""), "/api/prometheus/api/v1/query?query=up"); code != 503 || !strings.Contains(body, "prometheus_not_configured") {
		t.Fatalf("without PROMETHEUS_URL: %d %s", code, body)
	}
	if code, body := get(srv, "/config.json"); code != 200 || !strings.Contains(body, `"prometheus":true`) {
		t.Fatalf("config.json: %d %s", code, body)
	}
}
