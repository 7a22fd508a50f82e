package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/north-cloud/infrastructure/auth"
)

// apiRoutes are the paths (after the proxy's prefix; "*" is one segment)
// each proxied service serves to the browser: its /api/v1 routes as listed
// in docs/roles.md's route matrix, which the services' role-matrix tests
// hold to their route tables. Anything else (a service's /metrics for
// Prometheus, /health, /ready, pprof) is not forwarded: 404 at the
// dashboard.
var apiRoutes = map[string][]string{
	"/api/classifier": {
		"/api/v1/audit", "/api/v1/openapi.json",
		"/api/v1/rules", "/api/v1/rules/test", "/api/v1/rules/*", "/api/v1/rules/*/enable", "/api/v1/rules/*/disable",
		"/api/v1/classify",
		"/api/v1/models", "/api/v1/models/train", "/api/v1/models/rollback", "/api/v1/models/candidate",
		"/api/v1/models/*", "/api/v1/models/*/candidate", "/api/v1/models/*/promote",
		"/api/v1/labels", "/api/v1/labels/candidates", "/api/v1/labels/export", "/api/v1/labels/stats", "/api/v1/labels/*",
		"/api/v1/dlq", "/api/v1/dlq/stats", "/api/v1/dlq/requeue", "/api/v1/dlq/delete", "/api/v1/dlq/*/requeue", "/api/v1/dlq/*/attempts", "/api/v1/dlq/*",
		"/api/v1/sources", "/api/v1/sources/poll-status", "/api/v1/sources/stats", "/api/v1/sources/*",
		"/api/v1/sources/*/priority", "/api/v1/sources/*/reprocess", "/api/v1/sources/*/reprocess/*",
		"/api/v1/sources/*/reprocess/*/cancel",
		"/api/v1/stats",
	},
	"/api/publisher": {
		"/api/v1/audit", "/api/v1/openapi.json", "/api/v1/outbox/stats", "/api/v1/outbox", "/api/v1/outbox/retry",
		"/api/v1/outbox/*/retry", "/api/v1/channels",
	},
	"/api/index-manager": {
		"/api/v1/auth/login", "/api/v1/auth/refresh", "/api/v1/auth/logout", "/api/v1/auth/me", "/api/v1/audit", "/api/v1/openapi.json",
		"/api/v1/indices", "/api/v1/indices/*", "/api/v1/indices/*/mappings", "/api/v1/indices/*/stats",
		"/api/v1/indices/*/documents", "/api/v1/indices/*/documents/*", "/api/v1/indices/*/_refresh",
		"/api/v1/indices/*/_query", "/api/v1/content/_count", "/api/v1/aliases", "/api/v1/indices/*/aliases/*",
		"/api/v1/indices/*/_forcemerge", "/api/v1/tasks/*",
	},
}

// publicRoutes need no token (sign-in, and the session's refresh and
// sign-out, which carry its refresh token instead); every other proxied
// route needs a valid one at the dashboard, as at the service.
var publicRoutes = map[string][]string{
	"/api/index-manager": {"/api/v1/auth/login", "/api/v1/auth/refresh", "/api/v1/auth/logout"},
}

// classifierMetricsPath is the one non-API path the browser reads: the
// Overview's queue depth and active workers. It is answered by the
// dashboard server from the classifier's /metrics, to a holder of a token,
// with only the families in overviewMetrics (no per-source figures).
const classifierMetricsPath = "/metrics"

var overviewMetrics = []string{"classifier_queue_depth", "classifier_active_workers"}

// canonicalPath checks the escaped path after a proxy's prefix: every
// segment non-empty (no double or trailing slash), none a dot segment or
// holding an escaped slash or backslash once decoded, so the decoded path
// has the segments the raw one has and route, feature and role matching
// see what the service will route.
func canonicalPath(escaped string) error {
	if !strings.HasPrefix(escaped, "/") {
		return fmt.Errorf("the path must start with a slash")
	}
	for _, seg := range strings.Split(escaped[1:], "/") {
		dec, err := url.PathUnescape(seg)
		switch {
		case err != nil:
			return fmt.Errorf("malformed escape in %q", seg)
		case dec == "":
			return fmt.Errorf("empty path segment (double or trailing slash)")
		case dec == "." || dec == "..":
			return fmt.Errorf("dot segment %q", seg)
		case strings.ContainsAny(dec, "/\\"):
			return fmt.Errorf("escaped slash in segment %q", seg)
		}
	}
	return nil
}

// canonicalGate answers 400 to a request under one of the proxies'
// prefixes whose path is not canonical, before the mux would redirect it to
// a cleaned path (so a trick is refused, not silently rewritten).
func canonicalGate(prefixes []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.URL.EscapedPath()
		for _, p := range prefixes {
			if raw == p || strings.HasPrefix(raw, p+"/") {
				if err := canonicalPath(strings.TrimPrefix(raw, p)); err != nil {
					writeError(w, http.StatusBadRequest, "bad_path", "the path is refused: "+err.Error())
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// apiGate is the first gate of the proxy behind prefix: 400 for a path
// that is not canonical, 404 for a path that is not one of the service's
// API routes, 401 without a valid token for every route but sign-in; only
// then the feature, read-only and proxy handlers.
func apiGate(prefix string, a *auth.Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.EscapedPath(), prefix)
		if err := canonicalPath(path); err != nil {
			writeError(w, http.StatusBadRequest, "bad_path", "the path is refused: "+err.Error())
			return
		}
		if !matchAny(apiRoutes[prefix], path) {
			writeError(w, http.StatusNotFound, "not_found", "no API route at "+r.URL.Path)
			return
		}
		if !matchAny(publicRoutes[prefix], path) && !a.Authenticated(r) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required (log in to the dashboard)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if matchPath(p, path) {
			return true
		}
	}
	return false
}

// overviewMetricsHandler answers GET with the overviewMetrics families of
// the classifier's /metrics (fetched through proxy), nothing else.
func overviewMetricsHandler(proxy http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		var out bytes.Buffer
		sc := bufio.NewScanner(rec.Body)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
			for _, m := range overviewMetrics {
				if strings.HasPrefix(name, m+" ") || strings.HasPrefix(name, m+"{") {
					out.WriteString(line + "\n")
				}
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(out.Bytes())
	})
}
