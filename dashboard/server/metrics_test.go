package server_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	server "github.com/north-cloud/dashboard-server"
	"github.com/north-cloud/infrastructure/auth"
)

// scrape reads GET /metrics (no token, as Prometheus scrapes it) and
// returns each sample by its name and labels as exposed
// (`name{label="v"}`), and the response's status.
func scrape(t *testing.T, url string) (map[string]float64, int) {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	must(t, err)
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	must(t, sc.Err())
	return out, res.StatusCode
}

// waitMetric polls /metrics until sample satisfies ok, or fails after 30 s
// with the last value.
func waitMetric(t *testing.T, url, sample string, ok func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, _ := scrape(t, url)
		if v, has := m[sample]; has && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v (present %v) after 30 s", sample, m[sample], m[sample] != 0)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }

// TestMetricsLiveTail: against the real Redis, an open stream shows on
// dashboard_live_streams, a message it receives moves
// dashboard_live_messages_sent_total, a reader that stops reading makes
// dashboard_live_messages_dropped_total move, and each refusal is counted
// by its reason.
func TestMetricsLiveTail(t *testing.T) {
	t.Parallel()
	srv, rdb, prefix, channel := slowLiveSetup(t, "metrics", func(c *server.Config) {
		c.LiveMaxStreams, c.LiveMinRole = 2, auth.RoleOperator
	})
	m, code := scrape(t, srv.URL)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics without a token = %d, want 200 (Prometheus scrapes it as the services' /metrics)", code)
	}
	for _, s := range []string{"dashboard_live_streams", "dashboard_live_messages_sent_total", "dashboard_live_messages_dropped_total",
		`dashboard_live_streams_refused_total{reason="cap"}`, "go_goroutines", "process_resident_memory_bytes"} {
		if v, ok := m[s]; !ok || (strings.HasPrefix(s, "dashboard_") && v != 0) {
			t.Errorf("%s = %v (present %v), want 0 before any stream", s, v, ok)
		}
	}

	tok := roleToken(t, auth.RoleOperator)
	fast := readEvents(openLive(t, srv.URL, tok, nil))
	next(t, fast, "ready", nil)
	waitMetric(t, srv.URL, "dashboard_live_streams", func(v float64) bool { return v == 1 })
	id := prefix + "-first"
	publish(t, rdb, channel, id, "body")
	next(t, fast, "message", withID(id))
	waitMetric(t, srv.URL, "dashboard_live_messages_sent_total", atLeast(1))

	// A reader that stops after its first line (as in
	// TestLiveTailSlowReaderDoesNotBlockOthers): its buffer of 4 fills and
	// the messages beyond it are dropped and counted.
	slowRes, _ := openSlowLive(t, srv.URL, tok)
	waitMetric(t, srv.URL, "dashboard_live_streams", func(v float64) bool { return v == 2 })
	body := strings.Repeat("x", 64<<10)
	sent := 0
	m, _ = scrape(t, srv.URL)
	for m["dashboard_live_messages_dropped_total"] == 0 {
		if sent == 400 {
			t.Fatalf("400 messages of 64 KB to a reader that reads nothing, and none dropped: %v", m)
		}
		id := prefix + "-" + strconv.Itoa(sent)
		publish(t, rdb, channel, id, body)
		next(t, fast, "message", withID(id))
		sent++
		m, _ = scrape(t, srv.URL)
	}
	if v := m["dashboard_live_messages_sent_total"]; v < float64(sent+1) {
		t.Errorf("dashboard_live_messages_sent_total = %v, want at least the %d the fast stream received", v, sent+1)
	}

	// Refusals: a third stream over the cap of 2, no token, a viewer under
	// the minimum role operator.
	for _, tc := range []struct {
		tok, reason string
		status      int
	}{{tok, "cap", http.StatusTooManyRequests}, {"", "auth", http.StatusUnauthorized}, {roleToken(t, auth.RoleViewer), "role", http.StatusForbidden}} {
		res := openLive(t, srv.URL, tc.tok, nil)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("refused for %s = %d, want %d", tc.reason, res.StatusCode, tc.status)
		}
		waitMetric(t, srv.URL, `dashboard_live_streams_refused_total{reason="`+tc.reason+`"}`, func(v float64) bool { return v == 1 })
	}
	slowRes.Body.Close()
	waitMetric(t, srv.URL, "dashboard_live_streams", func(v float64) bool { return v == 1 })

	// DASHBOARD_FEATURES live_tail=off.
	off, err := server.ParseFeatures("live_tail=off")
	must(t, err)
	offSrv, _, _ := liveSetup(t, func(c *server.Config) { c.Features = off })
	res := openLive(t, offSrv.URL, tok, nil)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("live tail turned off = %d, want 403", res.StatusCode)
	}
	waitMetric(t, offSrv.URL, `dashboard_live_streams_refused_total{reason="feature"}`, func(v float64) bool { return v == 1 })
}

// TestMetricsProxyRequests: each proxied request is counted by upstream
// and the status answered, the proxy's own refusals included.
func TestMetricsProxyRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, true) // read-only: a POST is refused by the proxy itself
	for range 2 {
		if code, _, _ := get(t, b.srv.URL+"/api/classifier/api/v1/rules", "Authorization", "Bearer "+token(t)); code != http.StatusOK {
			t.Fatalf("GET through the proxy = %d", code)
		}
	}
	if code, _, _ := get(t, b.srv.URL+"/api/publisher/api/v1/outbox", "Authorization", "Bearer "+token(t)); code != http.StatusOK {
		t.Fatalf("GET through the proxy = %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/api/index-manager/api/v1/indices", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token(t))
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("POST in read-only = %d, want 403", res.StatusCode)
	}
	// The one-request reads are counted too, refusals included.
	for path, want := range map[string]int{"/api/overview?range=2y": 400, "/api/find?id=": 400, "/api/sources/priorities": 200} {
		if code, _, _ := get(t, b.srv.URL+path, "Authorization", "Bearer "+token(t)); code != want {
			t.Fatalf("GET %s = %d, want %d", path, code, want)
		}
	}
	if code, _, _ := get(t, b.srv.URL+"/api/find?id=x"); code != http.StatusUnauthorized {
		t.Fatalf("find without a token = %d, want 401", code)
	}
	m, _ := scrape(t, b.srv.URL)
	for sample, want := range map[string]float64{
		`dashboard_proxy_requests_total{code="200",upstream="classifier"}`:    2,
		`dashboard_proxy_requests_total{code="200",upstream="publisher"}`:     1,
		`dashboard_proxy_requests_total{code="403",upstream="index-manager"}`: 1,
		`dashboard_proxy_requests_total{code="400",upstream="overview"}`:      1,
		`dashboard_proxy_requests_total{code="400",upstream="find"}`:          1,
		`dashboard_proxy_requests_total{code="401",upstream="find"}`:          1,
		`dashboard_proxy_requests_total{code="200",upstream="priorities"}`:    1,
	} {
		if m[sample] != want {
			t.Errorf("%s = %v, want %v", sample, m[sample], want)
		}
	}
}
