package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	server "github.com/north-cloud/dashboard-server"
)

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
