package server_test

import (
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	server "github.com/north-cloud/dashboard-server"
)

// TestSecurityHeadersOnEveryResponse: every answer (the app's index page,
// its routes and assets, the server's API with and without a token, a 404,
// the probes) carries the Content-Security-Policy and the other security
// headers, and the CSP allows the built index.html's inline theme script by
// its hash, never by 'unsafe-inline' or 'unsafe-eval'.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	const inline = "\n      document.documentElement.classList.add('dark')\n    "
	b := setupCfg(t, func(c *server.Config) {
		must(t, os.WriteFile(filepath.Join(c.Dist, "index.html"),
			[]byte("<html><head><script>"+inline+"</script><script type=\"module\" src=\"/assets/app-abc.js\"></script></head></html>"), 0o644))
	})
	sum := sha256.Sum256([]byte(inline))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	tok := token(t)
	for _, c := range []struct {
		path string
		auth []string
	}{
		{"/", nil}, {"/indices", nil}, {"/assets/app-abc.js", nil},
		{"/api/openapi.json", []string{"Authorization", "Bearer " + tok}}, {"/api/openapi.json", nil},
		{"/api/features", nil}, {"/api/nothing", nil}, {"/health", nil}, {"/config.json", nil},
	} {
		_, h, _ := get(t, b.srv.URL+c.path, c.auth...)
		csp := h.Get("Content-Security-Policy")
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		for name, want := range map[string]string{
			"default-src": "'self'", "script-src": "'self' " + hash, "style-src": "'self'",
			"img-src": "'self' data:", "font-src": "'self'", "connect-src": "'self'",
			"object-src": "'none'", "base-uri": "'self'", "form-action": "'self'", "frame-ancestors": "'none'",
		} {
			if got, ok := directives[name]; !ok || got != want {
				t.Errorf("%s (token %v): CSP %s is %q, want %q (whole CSP %q)", c.path, c.auth != nil, name, got, want, csp)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "*") {
			t.Errorf("%s: CSP %q allows unsafe or wildcard sources", c.path, csp)
		}
		for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin"} {
			if got := h.Get(name); got != want {
				t.Errorf("%s: %s = %q, want %q", c.path, name, got, want)
			}
		}
	}
}
