package server_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	server "github.com/north-cloud/dashboard-server"
)

func do(t *testing.T, method, url, tok string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader("{}"))
	must(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	var body struct{ Error struct{ Code string } }
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body.Error.Code
}

func seen(b bundle) int {
	n := 0
	for _, s := range b.upstreams {
		n += len(*s)
	}
	return n
}

// TestProxyForwardsOnlyAPIRoutesWithAToken: a service's non-API paths
// (/metrics, /health, pprof) are 404 at the dashboard with or without a
// token, and an API route without a valid token is 401 at the dashboard;
// neither reaches the service. Sign-in needs no token.
func TestProxyForwardsOnlyAPIRoutesWithAToken(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tok := token(t)
	for _, path := range []string{
		"/api/publisher/metrics", "/api/classifier/health", "/api/index-manager/ready",
		"/api/classifier/debug/pprof/heap", "/api/classifier/api/v1/nothing", "/api/index-manager/api/v2/indices",
	} {
		for _, withToken := range []string{"", tok} {
			if code, _ := do(t, http.MethodGet, b.srv.URL+path, withToken); code != http.StatusNotFound {
				t.Errorf("GET %s (token %t) = %d, want 404", path, withToken != "", code)
			}
		}
	}
	for _, path := range []string{
		"/api/classifier/api/v1/sources/stats", "/api/classifier/api/v1/rules", "/api/publisher/api/v1/outbox",
		"/api/index-manager/api/v1/indices/x/documents/1", "/api/classifier/metrics",
	} {
		for _, bad := range []string{"", "not-a-token"} {
			if code, errCode := do(t, http.MethodGet, b.srv.URL+path, bad); code != http.StatusUnauthorized || errCode != "unauthorized" {
				t.Errorf("GET %s with token %q = %d %q, want 401 unauthorized", path, bad, code, errCode)
			}
		}
	}
	if n := seen(b); n != 0 {
		t.Fatalf("the upstreams saw %d requests, want none", n)
	}
	wantForwarded(t, b.srv.URL, http.MethodGet, "/api/classifier/api/v1/sources/stats", "with a token")
	for _, path := range []string{"/api/v1/auth/login", "/api/v1/auth/refresh", "/api/v1/auth/logout"} {
		if code, _ := do(t, http.MethodPost, b.srv.URL+"/api/index-manager"+path, ""); code != http.StatusOK {
			t.Errorf("POST %s without a token = %d, want forwarded (it carries credentials or a refresh token)", path, code)
		}
	}
	if code, _ := do(t, http.MethodGet, b.srv.URL+"/api/index-manager/api/v1/auth/sessions", ""); code != http.StatusNotFound && code != http.StatusUnauthorized {
		t.Errorf("GET the session list through the dashboard = %d, want it not served", code)
	}
}

// TestOverviewMetricsOnly: /api/classifier/metrics (the Overview's queue
// depth and active workers) answers, to a token holder, those two families
// of the classifier's /metrics and nothing else.
func TestOverviewMetricsOnly(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("# HELP classifier_queue_depth Queue.\n# TYPE classifier_queue_depth gauge\nclassifier_queue_depth 7\n" +
			"classifier_active_workers{pool=\"a\"} 2\nclassifier_source_documents_total{source=\"secret_source\"} 9\n"))
	}))
	defer up.Close()
	h, err := server.New(server.Config{Dist: t.TempDir(), ClassifierURL: up.URL, Auth: testAuth}, discard())
	must(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	status, _, body := get(t, srv.URL+"/api/classifier/metrics", "Authorization", "Bearer "+token(t))
	if status != http.StatusOK || !strings.Contains(body, "classifier_queue_depth 7") ||
		!strings.Contains(body, `classifier_active_workers{pool="a"} 2`) || strings.Contains(body, "secret_source") {
		t.Fatalf("overview metrics = %d %q, want the two families only", status, body)
	}
}

// TestEncodedPathTricksRefused: a path whose decoded form has other
// segments than its raw form (an escaped slash, a dot segment, a double or
// trailing slash) is 400 before any other check, and an escaped letter
// does not step around a disabled feature (matching is on decoded
// segments).
func TestEncodedPathTricksRefused(t *testing.T) {
	t.Parallel()
	off, err := server.ParseFeatures("rules_edit=off")
	must(t, err)
	b := setupCfg(t, func(c *server.Config) { c.Features = off })
	tok := token(t)
	for _, path := range []string{
		"/api/classifier/api/v1/rules%2F1",
		"/api/classifier/api/v1/sources/x%2Freprocess",
		"/api/classifier/api/v1/sources/x%2freprocess",
		"/api/classifier/api/v1/sources/x%5Creprocess",
		"/api/classifier/api/v1/sources/%2E%2E/rules",
		"/api/classifier/api/v1/sources/%2e/stats",
		"/api/classifier/api/v1//rules",
		"/api/classifier/api/v1/rules/",
		"/api/classifier//api/v1/rules",
	} {
		if code, errCode := do(t, http.MethodPost, b.srv.URL+path, tok); code != http.StatusBadRequest || errCode != "bad_path" {
			t.Errorf("POST %s = %d %q, want 400 bad_path", path, code, errCode)
		}
	}
	for _, path := range []string{"/api/classifier/api/v1/rul%65s", "/api/classifier/api/v1/%72ules/1/enable"} {
		if code, errCode := do(t, http.MethodPost, b.srv.URL+path, tok); code != http.StatusForbidden || errCode != "feature_disabled" {
			t.Errorf("POST %s with rules_edit off = %d %q, want 403 feature_disabled", path, code, errCode)
		}
	}
	if n := seen(b); n != 0 {
		t.Fatalf("the upstreams saw %d requests, want none", n)
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
