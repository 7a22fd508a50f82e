package httpserver

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Requests are counted per route template and status, panics included, and
// the raw path never becomes a label value.
func TestRequestMetricsPerRoute(t *testing.T) {
	t.Parallel()
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)).Meter("test")
	metrics := promhttp.HandlerFor(registry, promhttp.HandlerOpts{})
	srv, err := New(Config{Addr: ":0", ServiceName: "index-manager", Meter: meter}, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics)
	if err != nil {
		t.Fatal(err)
	}
	srv.Router().GET("/api/v1/indices/:name", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	srv.Router().GET("/boom", func(*gin.Context) { panic("boom") })
	for _, path := range []string{"/api/v1/indices/secret_one", "/api/v1/indices/secret_two", "/boom", "/nowhere"} {
		srv.Router().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	w := httptest.NewRecorder()
	srv.Router().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := w.Body.String()
	for _, want := range []string{
		`index_manager_http_requests_total{method="GET",route="/api/v1/indices/:name",status="204"} 2`,
		`index_manager_http_requests_total{method="GET",route="/boom",status="500"} 1`,
		`index_manager_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`index_manager_http_request_duration_seconds_bucket{method="GET",route="/api/v1/indices/:name",le="+Inf"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "secret_one") {
		t.Error("a raw path became a label value")
	}
}
