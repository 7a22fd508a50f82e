package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// readsByPost are the requests a read-only dashboard still forwards
// although they are not GET or HEAD: signing in and the session's refresh
// and sign-out, and the routes that only read (docs/roles.md). Paths are after the proxy's prefix; "*" is one
// path segment.
func readsByPost(prefix string) []string {
	switch prefix {
	case "/api/index-manager":
		return []string{"/api/v1/auth/login", "/api/v1/auth/refresh", "/api/v1/auth/logout", "/api/v1/indices/*/_query"}
	case "/api/classifier":
		return []string{"/api/v1/rules/test", "/api/v1/classify"}
	}
	return nil
}

// readOnly refuses with 403 every request to the API behind prefix that
// is not GET or HEAD (DASHBOARD_READ_ONLY=true), whatever the token's
// role, except sign-in and the reads sent by POST.
func readOnly(prefix string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || (r.Method == http.MethodPost && readByPost(prefix, r)) {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusForbidden, "read_only",
			fmt.Sprintf("the dashboard is read-only (DASHBOARD_READ_ONLY=true): %s is refused", r.Method))
	})
}

// readByPost reports whether r's path (escaped, so an escaped slash stays
// inside its segment) is one of prefix's reads sent by POST.
func readByPost(prefix string, r *http.Request) bool {
	got := strings.TrimPrefix(r.URL.EscapedPath(), prefix)
	for _, pattern := range readsByPost(prefix) {
		if matchPath(pattern, got) {
			return true
		}
	}
	return false
}

// matchPath reports whether an escaped path matches pattern segment by
// segment, each segment decoded (so "rul%65s" is "rules", and an escaped
// slash stays inside its segment), "*" standing for one non-empty segment.
func matchPath(pattern, escapedPath string) bool {
	want, got := strings.Split(pattern, "/"), strings.Split(escapedPath, "/")
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if dec, err := url.PathUnescape(got[i]); err == nil {
			got[i] = dec
		}
		if want[i] != got[i] && (want[i] != "*" || got[i] == "") {
			return false
		}
	}
	return true
}
