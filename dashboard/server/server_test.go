package server_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	server "github.com/north-cloud/dashboard-server"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// testSecret signs the tests' tokens (JWT_SECRET).
const testSecret = "dashboard-server-test-secret-0123456789abcdef"

var testAuth = auth.Config{Secret: testSecret}

// token issues a valid bearer token with the tests' secret.
func token(t *testing.T) string {
	t.Helper()
	return issue(t, testAuth)
}

func issue(t *testing.T, cfg auth.Config) string {
	t.Helper()
	a, err := auth.New(cfg)
	must(t, err)
	tok, _, err := a.Issue("operator", auth.RoleOperator, time.Hour)
	must(t, err)
	return tok
}

type bundle struct {
	srv       *httptest.Server
	upstreams map[string]*[]string // name -> request URIs it saw
}

// setup starts the dashboard server over a fake dist/ and three upstreams
// that echo the request they got.
func setup(t *testing.T, readOnly bool) bundle {
	t.Helper()
	return setupCfg(t, func(c *server.Config) { c.ReadOnly = readOnly })
}

// setupCfg is setup with the server's Config changed by edit (after the
// upstreams' URLs are set).
func setupCfg(t *testing.T, edit func(*server.Config)) bundle {
	t.Helper()
	dist := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dist, "index.html"), []byte("<html>app</html>"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dist, "assets"), 0o755))
	must(t, os.WriteFile(filepath.Join(dist, "assets", "app-abc.js"), []byte("console.log(1)"), 0o644))

	b := bundle{upstreams: map[string]*[]string{}}
	urls := map[string]string{}
	for _, name := range []string{"classifier", "publisher", "index-manager"} {
		seen := &[]string{}
		b.upstreams[name] = seen
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			*seen = append(*seen, r.RequestURI)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{
				"service": name, "uri": r.RequestURI, "auth": r.Header.Get("Authorization"), "method": r.Method,
				"forwarded_for": r.Header.Get("X-Forwarded-For"),
			})
		}))
		t.Cleanup(up.Close)
		urls[name] = up.URL
	}
	cfg := server.Config{
		Dist: dist, ClassifierURL: urls["classifier"], PublisherURL: urls["publisher"],
		IndexManagerURL: urls["index-manager"], Auth: testAuth,
	}
	edit(&cfg)
	return setupWith(t, b, cfg)
}

// setupWith starts the dashboard server of cfg into b.
func setupWith(t *testing.T, b bundle, cfg server.Config) bundle {
	t.Helper()
	h, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	must(t, err)
	b.srv = httptest.NewServer(h)
	// Close the handler first: it ends the live-tail streams the test
	// server would otherwise wait for.
	t.Cleanup(b.srv.Close)
	t.Cleanup(h.Close)
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantForwarded sends method path with an empty JSON body and fails the
// test, naming the case as when, unless the stub upstream answered it: the
// guard under test (read-only mode, a feature switch) let it pass.
func wantForwarded(t *testing.T, base, method, path, when string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token(t))
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("%s: %s %s = %d, want forwarded", when, method, path, res.StatusCode)
	}
}

func get(t *testing.T, url string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(body)
}

func TestProxyStripsPrefixAndKeepsTheRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tests := []struct{ path, service, wantURI string }{
		{"/api/classifier/api/v1/rules?enabled=true", "classifier", "/api/v1/rules?enabled=true"},
		{"/api/publisher/api/v1/outbox/stats", "publisher", "/api/v1/outbox/stats"},
		{"/api/index-manager/api/v1/indices/a%3Ab_raw_content", "index-manager", "/api/v1/indices/a%3Ab_raw_content"},
	}
	tok := "Bearer " + token(t)
	for _, tt := range tests {
		status, _, body := get(t, b.srv.URL+tt.path, "Authorization", tok)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", tt.path, status, body)
		}
		var got map[string]string
		must(t, json.Unmarshal([]byte(body), &got))
		if got["service"] != tt.service || got["uri"] != tt.wantURI || got["auth"] != tok {
			t.Errorf("%s reached %+v, want %s %s with the token", tt.path, got, tt.service, tt.wantURI)
		}
	}
}

// TestProxySetsForwardedFor: the services see the browser's address in
// X-Forwarded-For (the index-manager's login budgets are per client
// address), and only it: a forwarded chain the client sent is dropped, so
// a browser cannot pose as another address.
func TestProxySetsForwardedFor(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	for _, spoofed := range []string{"", "203.0.113.9", "203.0.113.9, 198.51.100.1"} {
		if status, got := forwardedFor(t, b, spoofed); status != http.StatusOK || got != "127.0.0.1" {
			t.Errorf("client sent X-Forwarded-For %q: the service saw %q (%d), want the peer 127.0.0.1", spoofed, got, status)
		}
	}
}

// forwardedFor sends a request with X-Forwarded-For chain (none when
// empty) through b's proxy and returns the X-Forwarded-For the service saw.
func forwardedFor(t *testing.T, b bundle, chain string) (int, string) {
	t.Helper()
	header := []string{"Content-Type", "application/json"}
	if chain != "" {
		header = append(header, "X-Forwarded-For", chain)
	}
	status, _, body := get(t, b.srv.URL+"/api/index-manager/api/v1/auth/login", header...)
	var got map[string]string
	must(t, json.Unmarshal([]byte(body), &got))
	return status, got["forwarded_for"]
}

// TestProxyBehindTrustedProxy: behind a reverse proxy listed in
// DASHBOARD_TRUSTED_PROXIES (here the test's own loopback peer), the
// services see the browser's address the proxy wrote (the nearest
// untrusted hop, not what the browser wrote left of it), and one address
// only, so they need trust only the dashboard.
func TestProxyBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	trusted, err := httpserver.ParseTrustedProxies("127.0.0.1, 10.0.0.0/8")
	must(t, err)
	b := setupCfg(t, func(c *server.Config) { c.TrustedProxies = trusted })
	for chain, want := range map[string]string{
		"":                                  "127.0.0.1", // no header: the peer
		"203.0.113.9":                       "203.0.113.9",
		"198.51.100.1, 203.0.113.9":         "203.0.113.9", // what the browser wrote is left of the proxy's entry
		"203.0.113.9, 10.1.2.3":             "203.0.113.9", // through a second trusted hop
		"198.51.100.1, not-an-ip, 10.1.2.3": "10.1.2.3",    // garbage stops the walk at a vouched-for hop
	} {
		if status, got := forwardedFor(t, b, chain); status != http.StatusOK || got != want {
			t.Errorf("X-Forwarded-For %q from a trusted proxy: the service saw %q (%d), want %q", chain, got, status, want)
		}
	}
}

func TestSPAFallbackAndFiles(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	for _, p := range []string{"/", "/indices", "/dlq?source=x", "/index.html"} {
		status, h, body := get(t, b.srv.URL+p)
		if status != http.StatusOK || body != "<html>app</html>" || h.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s = %d %q (cache %q), want index.html", p, status, body, h.Get("Cache-Control"))
		}
	}
	status, h, body := get(t, b.srv.URL+"/assets/app-abc.js")
	if status != http.StatusOK || body != "console.log(1)" || !strings.Contains(h.Get("Cache-Control"), "immutable") {
		t.Errorf("asset = %d %q %q", status, body, h.Get("Cache-Control"))
	}
	if status, _, _ := get(t, b.srv.URL+"/assets/missing.js"); status != http.StatusNotFound {
		t.Errorf("missing asset = %d, want 404", status)
	}
	if status, _, _ := get(t, b.srv.URL+"/../../etc/passwd"); status != http.StatusOK {
		t.Errorf("path traversal answered %d; want the app (cleaned path)", status)
	}
	status, _, body = get(t, b.srv.URL+"/api/other/x")
	if status != http.StatusNotFound || !strings.Contains(body, `"code":"not_found"`) {
		t.Errorf("unknown api = %d %s", status, body)
	}
}

func TestHealthReadyAndConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	if status, _, body := get(t, b.srv.URL+"/health"); status != 200 || !strings.Contains(body, "ok") {
		t.Errorf("/health = %d %s", status, body)
	}
	if status, _, _ := get(t, b.srv.URL+"/ready"); status != 200 {
		t.Errorf("/ready = %d", status)
	}
	status, h, body := get(t, b.srv.URL+"/config.json")
	if status != 200 || strings.TrimSpace(body) != `{"prometheus":false,"read_only":true}` || h.Get("Cache-Control") != "no-store" {
		t.Errorf("/config.json = %d %s", status, body)
	}
}

func TestUpstreamDownIs502InTheErrorShape(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	h, err := server.New(server.Config{Dist: t.TempDir(), ClassifierURL: dead.URL, Auth: testAuth}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	must(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	status, _, body := get(t, srv.URL+"/api/classifier/api/v1/rules", "Authorization", "Bearer "+token(t))
	if status != http.StatusBadGateway || !strings.Contains(body, `"code":"upstream_unavailable"`) {
		t.Errorf("dead upstream = %d %s", status, body)
	}
	// Without a build, /ready names it and pages say how to build.
	if status, _, _ := get(t, srv.URL+"/ready"); status != http.StatusServiceUnavailable {
		t.Errorf("/ready without dist = %d, want 503", status)
	}
	if status, _, body := get(t, srv.URL+"/indices"); status != http.StatusServiceUnavailable || !strings.Contains(body, "npm run build") {
		t.Errorf("page without dist = %d %s", status, body)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string {
		return func(k string) string {
			if k == "JWT_SECRET" {
				if v, ok := m[k]; ok {
					return v
				}
				return testSecret
			}
			return m[k]
		}
	}
	// Natively the dashboard listens on loopback only, unless told.
	c, err := server.ConfigFromEnv(env(map[string]string{}))
	if err != nil || c.Addr != "127.0.0.1:3000" || c.ClassifierURL != server.ClassifierURLDefault || c.ReadOnly ||
		c.Auth.Secret != testSecret || c.PrometheusMaxInFlight != 4 || c.PrometheusMaxInFlightPerUser != 2 || c.PrometheusTimeout != 20*time.Second {
		t.Errorf("defaults = %+v, %v", c, err)
	}
	c, err = server.ConfigFromEnv(env(map[string]string{"DASHBOARD_READ_ONLY": "true", "DASHBOARD_ADDR": "0.0.0.0:1",
		"DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT": "2", "DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER": "1", "DASHBOARD_PROMETHEUS_TIMEOUT": "5s"}))
	if err != nil || !c.ReadOnly || c.Addr != "0.0.0.0:1" || c.PrometheusMaxInFlight != 2 || c.PrometheusMaxInFlightPerUser != 1 || c.PrometheusTimeout != 5*time.Second {
		t.Errorf("read only = %+v, %v", c, err)
	}
	_, err = server.ConfigFromEnv(env(map[string]string{"DASHBOARD_READ_ONLY": "maybe", "PUBLISHER_URL": "ftp://x"}))
	if err == nil || !strings.Contains(err.Error(), "DASHBOARD_READ_ONLY") {
		t.Errorf("bad read-only: %v", err)
	}
	if _, err := server.ConfigFromEnv(env(map[string]string{"DASHBOARD_TRUSTED_PROXIES": "10.0.0.1,proxy.local"})); err == nil || !strings.Contains(err.Error(), "DASHBOARD_TRUSTED_PROXIES") {
		t.Errorf("DASHBOARD_TRUSTED_PROXIES with a host name: %v", err)
	}
	if c, err := server.ConfigFromEnv(env(map[string]string{"DASHBOARD_TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16"})); err != nil || len(c.TrustedProxies) != 2 {
		t.Errorf("DASHBOARD_TRUSTED_PROXIES: %+v %v", c.TrustedProxies, err)
	}
	if _, err := server.ConfigFromEnv(env(map[string]string{"DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER": "0"})); err == nil || !strings.Contains(err.Error(), "DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER") {
		t.Errorf("DASHBOARD_PROMETHEUS_MAX_IN_FLIGHT_PER_USER=0: %v", err)
	}
	_, err = server.ConfigFromEnv(env(map[string]string{"PUBLISHER_URL": "ftp://x"}))
	if err == nil || !strings.Contains(err.Error(), "PUBLISHER_URL") {
		t.Errorf("bad url: %v", err)
	}
	// The proxy's tokens are the services' tokens: without a usable
	// JWT_SECRET the server does not start.
	for _, secret := range []string{"", "short", "change-me-change-me-change-me-change-me"} {
		if _, err := server.ConfigFromEnv(env(map[string]string{"JWT_SECRET": secret})); err == nil || !strings.Contains(err.Error(), "JWT_SECRET") {
			t.Errorf("JWT_SECRET %q: %v", secret, err)
		}
	}
	if _, err := server.New(server.Config{Dist: t.TempDir()}, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Error("New without a secret: no error")
	}
}

// TestAssetsCompressed: the JavaScript goes gzip-compressed to a browser
// that accepts it, whole to one that does not or that asks for a range, and
// caches are told the answer depends on Accept-Encoding.
func TestAssetsCompressed(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	status, h, body := get(t, b.srv.URL+"/assets/app-abc.js", "Accept-Encoding", "br;q=0, gzip;q=0.8")
	if status != http.StatusOK || h.Get("Content-Encoding") != "gzip" || h.Get("Vary") != "Accept-Encoding" || !strings.HasPrefix(h.Get("Content-Type"), "text/javascript") {
		t.Fatalf("asset with gzip accepted = %d, encoding %q, vary %q, type %q", status, h.Get("Content-Encoding"), h.Get("Vary"), h.Get("Content-Type"))
	}
	zr, err := gzip.NewReader(strings.NewReader(body))
	must(t, err)
	plain, err := io.ReadAll(zr)
	must(t, err)
	if string(plain) != "console.log(1)" {
		t.Errorf("decompressed asset = %q", plain)
	}
	for _, header := range [][]string{{"Accept-Encoding", "identity"}, {"Accept-Encoding", "gzip;q=0"}, {"Accept-Encoding", "gzip", "Range", "bytes=0-6"}} {
		_, h, body := get(t, b.srv.URL+"/assets/app-abc.js", header...)
		if h.Get("Content-Encoding") != "" || !strings.HasPrefix("console.log(1)", body) || body == "" {
			t.Errorf("asset with %v = encoding %q body %q, want it uncompressed", header, h.Get("Content-Encoding"), body)
		}
	}
}

// TestAssetsBrotli: a browser that asks for br gets the file
// brotli-compressed (once, then from the cache), and the cache follows a
// rebuilt file.
func TestAssetsBrotli(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	for range 2 {
		status, h, body := get(t, b.srv.URL+"/assets/app-abc.js", "Accept-Encoding", "gzip, deflate, br")
		if status != http.StatusOK || h.Get("Content-Encoding") != "br" || h.Get("Vary") != "Accept-Encoding" || !strings.HasPrefix(h.Get("Content-Type"), "text/javascript") {
			t.Fatalf("asset with br accepted = %d, encoding %q, vary %q, type %q", status, h.Get("Content-Encoding"), h.Get("Vary"), h.Get("Content-Type"))
		}
		plain, err := io.ReadAll(brotli.NewReader(strings.NewReader(body)))
		must(t, err)
		if string(plain) != "console.log(1)" {
			t.Errorf("decompressed asset = %q", plain)
		}
	}
	// Only when named: "*" still means gzip, and br;q=0 refuses it.
	for _, ae := range []string{"*", "br;q=0, gzip"} {
		if _, h, _ := get(t, b.srv.URL+"/assets/app-abc.js", "Accept-Encoding", ae); h.Get("Content-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q: encoding %q, want gzip", ae, h.Get("Content-Encoding"))
		}
	}
}
