package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	server "github.com/north-cloud/dashboard-server"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/openapi"
	"github.com/north-cloud/infrastructure/openapi/openapitest"
	"github.com/north-cloud/infrastructure/testenv"
)

// promBundle is a dashboard server in front of a Prometheus stand-in that
// records what reached it.
type promBundle struct {
	srv   *httptest.Server
	token string
	mu    sync.Mutex
	seen  []string
}

func (b *promBundle) reached() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

// promSetup starts the dashboard server over a Prometheus stand-in that
// answers with an empty matrix, or runs upstream when it is not nil.
func promSetup(t *testing.T, cfg server.Config, upstream http.HandlerFunc) *promBundle {
	t.Helper()
	b := &promBundle{token: token(t)}
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.seen = append(b.seen, r.URL.Path+"?"+r.URL.RawQuery)
		b.mu.Unlock()
		if upstream != nil {
			upstream(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
	}))
	t.Cleanup(prom.Close)
	dist := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dist, "index.html"), []byte("<html></html>"), 0o644))
	cfg.Dist, cfg.Auth = dist, testAuth
	if cfg.PrometheusURL == "" {
		cfg.PrometheusURL = prom.URL
	}
	h, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	must(t, err)
	b.srv = httptest.NewServer(h)
	t.Cleanup(b.srv.Close)
	return b
}

// do sends method path with the bundle's token unless anonymous.
func (b *promBundle) do(t *testing.T, method, path string, anonymous bool) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, nil)
	must(t, err)
	if !anonymous {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(body)
}

func queryPath(query string) string {
	return "/api/prometheus/api/v1/query?" + url.Values{"query": {query}}.Encode()
}

// TestPrometheusProxy: query_range and query reach Prometheus with only
// their own parameters; other paths, huge ranges and too many points are
// refused before.
func TestPrometheusProxy(t *testing.T) {
	t.Parallel()
	b := promSetup(t, server.Config{}, nil)

	q := url.Values{"query": {`sum(classifier_queue_depth)`}, "start": {"1700000000"}, "end": {"1700003600"}, "step": {"15"}, "extra": {"x"}}
	if code, _, body := b.do(t, "GET", "/api/prometheus/api/v1/query_range?"+q.Encode(), false); code != 200 || !strings.Contains(body, `"success"`) {
		t.Fatalf("query_range: %d %s", code, body)
	}
	seen := b.reached()
	if len(seen) != 1 || !strings.HasPrefix(seen[0], "/api/v1/query_range?") || strings.Contains(seen[0], "extra") || !strings.Contains(seen[0], "step=15") {
		t.Fatalf("Prometheus saw %v", seen)
	}
	if code, _, _ := b.do(t, "GET", queryPath("classifier_dlq_depth"), false); code != 200 {
		t.Fatalf("query: %d", code)
	}
	for what, p := range map[string]string{
		"another endpoint": "/api/prometheus/api/v1/series?query=classifier_dlq_depth",
		"admin API":        "/api/prometheus/api/v1/admin/tsdb/delete_series?match[]=up",
		"no query":         "/api/prometheus/api/v1/query_range?start=1&end=2&step=1",
		"over a week":      "/api/prometheus/api/v1/query_range?query=classifier_dlq_depth&start=1700000000&end=1701000000&step=3600",
		"too many points":  "/api/prometheus/api/v1/query_range?query=classifier_dlq_depth&start=1700000000&end=1700100000&step=1",
		"end before start": "/api/prometheus/api/v1/query_range?query=classifier_dlq_depth&start=1700000100&end=1700000000&step=1",
	} {
		if code, _, body := b.do(t, "GET", p, false); code < 400 || code >= 500 {
			t.Errorf("%s: %d %s, want 4xx", what, code, body)
		}
	}
	if n := len(b.reached()); n != 2 {
		t.Fatalf("refused requests reached Prometheus: %v", b.reached())
	}
	if code, _, body := b.do(t, "GET", "/config.json", true); code != 200 || !strings.Contains(body, `"prometheus":true`) {
		t.Fatalf("config.json: %d %s", code, body)
	}
}

// TestPrometheusProxyNotConfigured: without PROMETHEUS_URL the proxy says
// so, to holders of a token.
func TestPrometheusProxyNotConfigured(t *testing.T) {
	t.Parallel()
	dist := t.TempDir()
	h, err := server.New(server.Config{Dist: dist, Auth: testAuth}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	status, _, body := get(t, srv.URL+queryPath("classifier_dlq_depth"), "Authorization", "Bearer "+token(t))
	if status != 503 || !strings.Contains(body, "prometheus_not_configured") {
		t.Fatalf("without PROMETHEUS_URL: %d %s", status, body)
	}
}

// TestPrometheusProxyNeedsToken: without a valid bearer token of the
// services (none, malformed, signed with another secret, in a query
// parameter as an <img> tag could carry) the proxy answers 401 and
// Prometheus sees nothing; it answers only GET.
func TestPrometheusProxyNeedsToken(t *testing.T) {
	t.Parallel()
	b := promSetup(t, server.Config{}, nil)
	path := queryPath("sum(classifier_queue_depth)")
	for what, header := range map[string]string{
		"no token":       "",
		"not bearer":     "Basic b3A6cHc=",
		"garbage":        "Bearer not-a-jwt",
		"another secret": "Bearer " + foreignToken(t),
	} {
		var h []string
		if header != "" {
			h = []string{"Authorization", header}
		}
		status, hdr, body := get(t, b.srv.URL+path, h...)
		if status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != "Bearer" || !strings.Contains(body, `"code":"unauthorized"`) {
			t.Errorf("%s: %d %q %s, want 401 with WWW-Authenticate", what, status, hdr.Get("WWW-Authenticate"), body)
		}
	}
	if status, _, _ := get(t, b.srv.URL+path+"&access_token="+b.token); status != http.StatusUnauthorized {
		t.Errorf("token in the query string: %d, want 401", status)
	}
	if status, _, _ := b.do(t, "GET", "/api/openapi.json", true); status != http.StatusUnauthorized {
		t.Errorf("openapi.json without a token: %d, want 401", status)
	}
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		status, hdr, body := b.do(t, m, path, false)
		if status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET" {
			t.Errorf("%s: %d %q %s, want 405 Allow: GET", m, status, hdr.Get("Allow"), body)
		}
	}
	if seen := b.reached(); len(seen) != 0 {
		t.Fatalf("refused requests reached Prometheus: %v", seen)
	}
	if status, _, _ := b.do(t, "GET", path, false); status != http.StatusOK {
		t.Fatalf("with a token: %d", status)
	}
}

// foreignToken is a token of the right shape signed with another secret.
func foreignToken(t *testing.T) string {
	t.Helper()
	other := testAuth
	other.Secret = strings.Repeat("x", 40)
	return issue(t, other)
}

// TestPrometheusProxyAllowlist: only the dashboard's metrics, the allowed
// aggregations and functions, and bounded ranges, subqueries and offsets
// reach Prometheus; anything else is 400 query_not_allowed naming what was
// refused.
func TestPrometheusProxyAllowlist(t *testing.T) {
	t.Parallel()
	b := promSetup(t, server.Config{}, nil)
	allowed := []string{
		`sum(classifier_queue_depth)`,
		`sum(classifier_outbox_backlog{status=~"pending|publishing"})`,
		`sum by (status) (classifier_outbox_backlog{status="failed"}) > 0`,
		`max_over_time(classifier_dlq_depth[7d])`,
		`rate(classifier_dlq_depth[5m] offset 1h)`,
		`max_over_time(sum(classifier_queue_depth)[1d:1m])`,
		`-classifier_queue_depth * 2 + (classifier_dlq_depth)`,
	}
	for _, q := range allowed {
		if status, _, body := b.do(t, "GET", queryPath(q), false); status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", q, status, body)
		}
	}
	refused := map[string]string{
		`up`:                                                        `the metric "up" is not allowed`,
		`sum(prometheus_tsdb_head_series)`:                          `the metric "prometheus_tsdb_head_series" is not allowed`,
		`{__name__=~".+"}`:                                          `a selector must name its metric`,
		`{__name__="classifier_queue_depth"}`:                       `a selector must name its metric`,
		`classifier_queue_depth + on() up`:                          `the metric "up" is not allowed`,
		`topk(1, classifier_queue_depth)`:                           `the aggregation topk is not allowed`,
		`count_values("v", classifier_dlq_depth)`:                   `the aggregation count_values is not allowed`,
		`absent(classifier_queue_depth)`:                            `the function absent is not allowed`,
		`label_replace(classifier_queue_depth, "a", "b", "c", "d")`: `the function label_replace is not allowed`,
		`max_over_time(classifier_dlq_depth[8d])`:                   `a range selector must be a fixed duration of at most 7d`,
		`max_over_time(classifier_dlq_depth[1y])`:                   `a range selector must be a fixed duration of at most 7d`,
		`max_over_time(classifier_dlq_depth[30d:1h])`:               `a subquery must be a fixed duration of at most 7d`,
		`max_over_time(classifier_dlq_depth[1h:])`:                  `a subquery needs an explicit step`,
		`max_over_time(classifier_dlq_depth[7d:1s])`:                `a subquery may have at most 11000 steps`,
		`classifier_dlq_depth offset 30d`:                           `an offset must be a fixed duration of at most 7d`,
		`classifier_dlq_depth @ 0`:                                  `the @ modifier is not allowed`,
		`"a string"`:                                                `string literals are not allowed`,
		`sum(classifier_queue_depth`:                                `not valid PromQL`,
	}
	for q, want := range refused {
		status, _, body := b.do(t, "GET", queryPath(q), false)
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal([]byte(body), &e)
		if status != http.StatusBadRequest || e.Error.Code != "query_not_allowed" || !strings.Contains(e.Error.Message, want) {
			t.Errorf("%s: %d %s, want 400 query_not_allowed saying %q", q, status, body, want)
		}
		q := url.Values{"query": {q}, "start": {"1700000000"}, "end": {"1700003600"}, "step": {"60"}}
		if status, _, body := b.do(t, "GET", "/api/prometheus/api/v1/query_range?"+q.Encode(), false); status != http.StatusBadRequest {
			t.Errorf("query_range %s: %d %s, want 400", q, status, body)
		}
	}
	if n := len(b.reached()); n != len(allowed) {
		t.Fatalf("Prometheus saw %d queries, want the %d allowed: %v", n, len(allowed), b.reached())
	}
}

// holding is a Prometheus that holds each query hold selects (every query
// when hold is nil), saying so on arrived, until release closes or the
// request ends, and answers the others at once; each gets an empty vector.
func holding(arrived chan<- struct{}, release <-chan struct{}, hold func(*http.Request) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if hold == nil || hold(r) {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}
}

// TestPrometheusProxyConcurrencyCap: at most PrometheusMaxInFlight queries
// are in flight (here of one user, whose own cap is as high); one more gets 429 with Retry-After at once, and a slot is
// free again when a query ends.
func TestPrometheusProxyConcurrencyCap(t *testing.T) {
	t.Parallel()
	const limit = 2
	arrived := make(chan struct{}, limit+1)
	release := make(chan struct{})
	b := promSetup(t, server.Config{PrometheusMaxInFlight: limit, PrometheusMaxInFlightPerUser: limit}, holding(arrived, release, nil))
	path := queryPath("sum(classifier_queue_depth)")
	done := make(chan int, limit)
	for range limit {
		go func() {
			req, _ := http.NewRequest("GET", b.srv.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+b.token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
	}
	for range limit {
		<-arrived
	}
	status, hdr, body := b.do(t, "GET", path, false)
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || !strings.Contains(body, `"code":"too_many_requests"`) {
		t.Fatalf("over the cap: %d %q %s, want 429 with Retry-After", status, hdr.Get("Retry-After"), body)
	}
	close(release)
	for range limit {
		if s := <-done; s != http.StatusOK {
			t.Fatalf("a query within the cap: %d", s)
		}
	}
	if status, _, body := b.do(t, "GET", path, false); status != http.StatusOK {
		t.Fatalf("after the queries ended: %d %s", status, body)
	}
}

// TestPrometheusProxyTimeout: a Prometheus that does not answer within
// PrometheusTimeout gets 504, and the slot is given back.
func TestPrometheusProxyTimeout(t *testing.T) {
	t.Parallel()
	b := promSetup(t, server.Config{PrometheusTimeout: 100 * time.Millisecond, PrometheusMaxInFlight: 1}, func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	for range 2 {
		status, _, body := b.do(t, "GET", queryPath("sum(classifier_queue_depth)"), false)
		if status != http.StatusGatewayTimeout || !strings.Contains(body, `"code":"upstream_timeout"`) {
			t.Fatalf("hung Prometheus: %d %s, want 504", status, body)
		}
	}
}

// frontEndQueries returns the PromQL the Overview asks (the summary's
// queries, overview.go), with $lookback as the shortest step's, so the
// allowlist cannot drift from what the charts ask.
func frontEndQueries(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, q := range server.OverviewQueries() {
		// $lookback is each step's selector range.
		out = append(out, strings.ReplaceAll(q, "$lookback", "30s"))
	}
	return out
}

// TestPrometheusProxyRealPrometheus: the Overview's own queries, through
// the proxy, are answered by a real Prometheus (Debian's package) scraping
// a target that exposes the dashboard's gauges, with the series in the
// answer; every answer matches the server's OpenAPI document.
func TestPrometheusProxyRealPrometheus(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.Unavailable(t, "prometheus (apt-get install prometheus)", err)
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, "classifier_queue_depth{source=\"a\"} 3\nclassifier_dlq_depth 1\n"+
			"classifier_dlq_backlog{state=\"retrying\"} 1\nclassifier_dlq_backlog{state=\"exhausted\"} 4\n"+
			"classifier_documents_processed_total{source=\"a\"} 10\nclassifier_publications_total{source=\"a\",decision=\"first\"} 8\n"+
			"classifier_outbox_backlog{status=\"pending\"} 2\nclassifier_outbox_backlog{status=\"failed\"} 5\nsecret_metric 42\n")
	}))
	t.Cleanup(target.Close)
	promAddr := startPrometheus(t, bin, strings.TrimPrefix(target.URL, "http://"))
	b := promSetup(t, server.Config{PrometheusURL: "http://" + promAddr}, nil)
	doc, err := openapi.Load(openAPIDoc(t, b))
	must(t, err)

	check := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", b.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+b.token)
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if err := doc.CheckResponse(req, res.StatusCode, res.Header, body); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		return res.StatusCode, string(body)
	}
	// Wait for the first scrape: the dashboard's gauges have a value.
	deadline := time.Now().Add(60 * time.Second)
	for {
		// Two scrapes at least, so rate() has samples to work on.
		status, body := check(queryPath("sum(classifier_outbox_backlog)"))
		_, rates := check(queryPath("sum(rate(classifier_documents_processed_total[1m]))"))
		if status == 200 && strings.Contains(body, `"7"`) && strings.Contains(rates, `"value"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus never had the target's series: %d %s", status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// What each query's answer holds, by the metric it reads: its series
	// (by state or status where the query groups) and their values.
	want := map[string][]string{
		"classifier_queue_depth":    {`"3"`},
		"classifier_dlq_backlog":    {`{"state":"retrying"}`, `"1"`, `{"state":"exhausted"}`, `"4"`},
		"classifier_outbox_backlog": {`{"status":"pending"}`, `"2"`, `{"status":"failed"}`, `"5"`},
		// Counters younger than the range: counted whole, per minute of
		// the range (the divisor at the query's end).
		"classifier_documents_processed_total": {`{"source":"a"}`},
		"classifier_publications_total":        {`{"source":"a"}`},
	}
	whole := map[string]float64{"classifier_documents_processed_total": 10, "classifier_publications_total": 8}
	divisor := regexp.MustCompile(`/ (\d+)$`)
	end := time.Now().Unix() + 1 // the point at end follows the sample just seen
	for _, q := range frontEndQueries(t) {
		params := url.Values{"query": {q}, "start": {fmt.Sprint(end - 3600)}, "end": {fmt.Sprint(end)}, "step": {"30"}}
		status, body := check("/api/prometheus/api/v1/query_range?" + params.Encode())
		var res struct {
			Status string `json:"status"`
			Data   struct {
				ResultType string            `json:"resultType"`
				Result     []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(body), &res)
		metric := regexp.MustCompile(`classifier_[a-z_]+`).FindString(q)
		if strings.Contains(q, `source="metro"`) {
			// Narrowed to a source the target does not have: no series.
			if status != 200 || res.Status != "success" || len(res.Data.Result) != 0 {
				t.Errorf("the Overview's %s: %d %s, want an empty matrix", q, status, body)
			}
			continue
		}
		if status != 200 || res.Status != "success" || res.Data.ResultType != "matrix" || len(res.Data.Result) == 0 || len(want[metric]) == 0 {
			t.Errorf("the Overview's %s: %d %s, want a matrix of %s", q, status, body, metric)
		}
		if m := divisor.FindStringSubmatch(q); m != nil {
			minutes, _ := strconv.ParseFloat(m[1], 64)
			if w := `"` + strconv.FormatFloat(whole[metric]/minutes, 'f', -1, 64) + `"`; !strings.Contains(body, w) {
				t.Errorf("the Overview's %s: %s, want %s in it (the counter whole, per minute of the range)", q, body, w)
			}
		}
		for _, w := range want[metric] {
			if !strings.Contains(body, w) {
				t.Errorf("the Overview's %s: %s, want %s in it", q, body, w)
			}
		}
	}
	if status, body := check(queryPath("secret_metric")); status != http.StatusBadRequest {
		t.Errorf("a metric Prometheus holds but the dashboard does not use: %d %s", status, body)
	}
}

func openAPIDoc(t *testing.T, b *promBundle) []byte {
	t.Helper()
	status, _, body := b.do(t, "GET", "/api/openapi.json", false)
	if status != http.StatusOK {
		t.Fatalf("openapi.json: %d %s", status, body)
	}
	return []byte(body)
}

// startPrometheus runs prometheus scraping target every second until the
// test ends and returns its address once it is ready.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	return testenv.Prometheus(t, bin, fmt.Sprintf(
		"global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: dashboard\n    static_configs:\n      - targets: [%q]\n", target))
}

// TestPrometheusProxyAlerts: the alerts Prometheus's rules hold reach a
// signed-in dashboard through /api/prometheus/api/v1/alerts, firing ones
// with their labels and annotations, and no one else; the answer matches
// the server's OpenAPI document.
func TestPrometheusProxyAlerts(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.Unavailable(t, "prometheus (apt-get install prometheus)", err)
	}
	rules := filepath.Join(t.TempDir(), "alerts.yml")
	must(t, os.WriteFile(rules, []byte("groups:\n  - name: test\n    interval: 1s\n    rules:\n"+
		"      - alert: AlwaysFiring\n        expr: vector(1)\n        labels: {severity: warning}\n        annotations: {summary: fires for the test}\n"), 0o644))
	promAddr := testenv.Prometheus(t, bin, fmt.Sprintf("global:\n  evaluation_interval: 1s\nrule_files: [%q]\n", rules))
	b := promSetup(t, server.Config{PrometheusURL: "http://" + promAddr}, nil)
	doc, err := openapi.Load(openAPIDoc(t, b))
	must(t, err)
	if code, _, _ := b.do(t, "GET", "/api/prometheus/api/v1/alerts", true); code != http.StatusUnauthorized {
		t.Errorf("alerts without a token: %d, want 401", code)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest("GET", b.srv.URL+"/api/prometheus/api/v1/alerts", nil)
		req.Header.Set("Authorization", "Bearer "+b.token)
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if err := doc.CheckResponse(req, res.StatusCode, res.Header, body); err != nil {
			t.Fatalf("alerts: %v", err)
		}
		if res.StatusCode == 200 && strings.Contains(string(body), `"alertname":"AlwaysFiring"`) && strings.Contains(string(body), `"state":"firing"`) {
			if !strings.Contains(string(body), `"summary":"fires for the test"`) {
				t.Errorf("alerts: %s, want the annotations", body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the firing alert never came through the proxy: %d %s", res.StatusCode, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestEmptyQueryValuesAre400 sends every query parameter the server's
// OpenAPI document says refuses an empty value ("?query=") and wants 400
// for each, before anything reaches Prometheus.
func TestEmptyQueryValuesAre400(t *testing.T) {
	t.Parallel()
	b := promSetup(t, server.Config{}, nil)
	doc, err := openapi.Load(openAPIDoc(t, b))
	must(t, err)
	openapitest.CheckEmptyQueryParams(t, b.srv.Config.Handler, doc, http.Header{"Authorization": {"Bearer " + b.token}}, nil)
	if seen := b.reached(); len(seen) != 0 {
		t.Errorf("empty parameters reached Prometheus: %q", seen)
	}
}

// TestPrometheusProxySubqueryAndStepBounds: a subquery inside another
// subquery, a subquery of more than 11,000 steps (range / step) and a
// query_range of more than 11,000 steps ((end - start) / step) are 400 with
// a JSON error saying why, and never reach Prometheus; the same shapes
// within the bounds pass.
func TestPrometheusProxySubqueryAndStepBounds(t *testing.T) {
	t.Parallel()
	b := promSetup(t, server.Config{}, nil)
	type refusal struct{ code, says string }
	decode := func(body string) (e struct {
		Error struct{ Code, Message string }
	}) {
		_ = json.Unmarshal([]byte(body), &e)
		return e
	}
	refused := map[string]refusal{
		queryPath(`max_over_time(max_over_time(classifier_dlq_depth[5m:1m])[1h:1m])`):                                                                                   {"query_not_allowed", "nested subqueries are not allowed"},
		queryPath(`max_over_time(sum(max_over_time(classifier_dlq_depth[5m:1m]))[1h:5m])`):                                                                              {"query_not_allowed", "nested subqueries are not allowed"},
		queryPath(`rate(classifier_dlq_depth[5m:1m])[1h:1m]`):                                                                                                           {"query_not_allowed", "nested subqueries are not allowed"},
		queryPath(`max_over_time(classifier_dlq_depth[7d:54s])`):                                                                                                        {"query_not_allowed", "at most 11000 steps"},
		"/api/prometheus/api/v1/query_range?" + url.Values{"query": {"classifier_dlq_depth"}, "start": {"1700000000"}, "end": {"1700011001"}, "step": {"1"}}.Encode():   {"invalid_step", "at most 11000 steps"},
		"/api/prometheus/api/v1/query_range?" + url.Values{"query": {"classifier_dlq_depth"}, "start": {"1700000000"}, "end": {"1700003600"}, "step": {"NaN"}}.Encode(): {"invalid_step", "positive number of seconds"},
	}
	for path, want := range refused {
		status, hdr, body := b.do(t, "GET", path, false)
		e := decode(body)
		if status != http.StatusBadRequest || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || e.Error.Code != want.code || !strings.Contains(e.Error.Message, want.says) {
			t.Errorf("%s: %d %s, want 400 %s saying %q", path, status, body, want.code, want.says)
		}
	}
	if seen := b.reached(); len(seen) != 0 {
		t.Fatalf("refused queries reached Prometheus: %v", seen)
	}
	allowed := []string{
		queryPath(`max_over_time(classifier_dlq_depth[1h:1m])`),
		queryPath(`max_over_time(classifier_dlq_depth[5m:1m]) + max_over_time(classifier_queue_depth[1h:1m])`),
		queryPath(`max_over_time(classifier_dlq_depth[7d:55s])`),
		"/api/prometheus/api/v1/query_range?" + url.Values{"query": {"classifier_dlq_depth"}, "start": {"1700000000"}, "end": {"1700011000"}, "step": {"1"}}.Encode(),
	}
	for _, path := range allowed {
		if status, _, body := b.do(t, "GET", path, false); status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", path, status, body)
		}
	}
}

// issueFor issues a token of the tests' secret for subject.
func issueFor(t *testing.T, subject string) string {
	t.Helper()
	a, err := auth.New(testAuth)
	must(t, err)
	tok, _, err := a.Issue(subject, auth.RoleViewer, time.Hour)
	must(t, err)
	return tok
}

// TestPrometheusProxyPerUserCap: a user with PrometheusMaxInFlightPerUser
// queries in flight gets 429 with Retry-After for one more, while another
// user's query, within the global cap, is answered; once the first user's
// queries end, it may query again.
func TestPrometheusProxyPerUserCap(t *testing.T) {
	t.Parallel()
	const perUser = 2
	arrived := make(chan struct{}, perUser)
	release := make(chan struct{})
	// Prometheus holds the heavy user's queries (on classifier_queue_depth)
	// until release, and answers the others at once.
	b := promSetup(t, server.Config{PrometheusMaxInFlight: 4, PrometheusMaxInFlightPerUser: perUser}, holding(arrived, release,
		func(r *http.Request) bool {
			return strings.Contains(r.URL.Query().Get("query"), "classifier_queue_depth")
		}))
	heavy, other := issueFor(t, "heavy-user"), issueFor(t, "other-user")
	call := func(tok, query string) (int, http.Header, string) {
		req, err := http.NewRequest("GET", b.srv.URL+queryPath(query), nil)
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err.Error()
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(body)
	}
	done := make(chan int, perUser)
	for range perUser {
		go func() {
			status, _, _ := call(heavy, "sum(classifier_queue_depth)")
			done <- status
		}()
	}
	for range perUser {
		<-arrived
	}
	status, hdr, body := call(heavy, "sum(classifier_dlq_depth)")
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || !strings.Contains(body, `"code":"too_many_requests"`) || !strings.Contains(body, "one user") {
		t.Errorf("the heavy user over its own cap: %d %q %s, want 429 with Retry-After naming the per-user cap", status, hdr.Get("Retry-After"), body)
	}
	if status, _, body := call(other, "sum(classifier_dlq_depth)"); status != http.StatusOK || !strings.Contains(body, `"success"`) {
		t.Errorf("another user while the heavy one is at its cap: %d %s, want 200", status, body)
	}
	close(release)
	for range perUser {
		if s := <-done; s != http.StatusOK {
			t.Errorf("a query within the heavy user's cap: %d", s)
		}
	}
	if status, _, body := call(heavy, "sum(classifier_dlq_depth)"); status != http.StatusOK {
		t.Errorf("the heavy user after its queries ended: %d %s", status, body)
	}
}
