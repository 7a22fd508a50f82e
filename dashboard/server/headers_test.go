package server_test

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	server "github.com/north-cloud/dashboard-server"
)

// Every answer (the app, the API, a 404, the probes) carries the security
// headers, and the CSP allows the built index.html's inline theme script by
// its hash, never by 'unsafe-inline'.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	const inline = "\n      document.documentElement.classList.add('dark')\n    "
	b := setupCfg(t, func(c *server.Config) {
		must(t, os.WriteFile(filepath.Join(c.Dist, "index.html"),
			[]byte("<html><head><script>"+inline+"</script><script type=\"module\" src=\"/assets/app-abc.js\"></script></head></html>"), 0o644))
	})
	sum := sha256.Sum256([]byte(inline))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	for _, path := range []string{"/", "/indices", "/assets/app-abc.js", "/api/openapi.json", "/api/nothing", "/health", "/config.json"} {
		_, h, _ := get(t, b.srv.URL+path)
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self' " + hash, "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q allows unsafe sources", path, csp)
		}
		for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin"} {
			if got := h.Get(name); got != want {
				t.Errorf("%s: %s = %q, want %q", path, name, got, want)
			}
		}
	}
}

func TestNewHTTPServerHasTimeouts(t *testing.T) {
	t.Parallel()
	srv := server.NewHTTPServer(":0", http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("timeouts: header %v read %v write %v idle %v, want all set",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
}

// The start-up line never carries a URL's password (PROMETHEUS_URL may hold
// basic-auth credentials), and keeps the user and host.
func TestLogAttrsRedactsURLPasswords(t *testing.T) {
	t.Parallel()
	cfg := server.Config{
		PrometheusURL: "http://prom:s3cret-prom@prometheus:9090", ClassifierURL: "http://u:s3cret-cl@classifier:8071",
		PublisherURL: "http://u:s3cret-pub@publisher:8070", IndexManagerURL: "http://u:s3cret-im@index-manager:8090",
		RedisURL: "redis://:s3cret-redis@redis:6379/0",
	}
	attrs := cfg.LogAttrs()
	var line strings.Builder
	for _, a := range attrs {
		line.WriteString(fmt.Sprint(a) + " ")
	}
	if strings.Contains(line.String(), "s3cret") {
		t.Fatalf("log attributes carry a password: %s", line.String())
	}
	if !strings.Contains(line.String(), "prom:xxxxx@prometheus:9090") {
		t.Fatalf("log attributes lost the Prometheus user and host: %s", line.String())
	}
}
