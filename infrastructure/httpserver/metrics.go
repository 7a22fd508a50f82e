package httpserver

import (
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MetricPrefix is the service's metric prefix: its name with '-' as '_'
// ("index-manager" -> "index_manager").
func MetricPrefix(service string) string {
	return strings.ReplaceAll(service, "-", "_")
}

// requestMetrics counts requests and their durations per route template
// (never the raw path, so label values stay bounded):
// <prefix>_http_requests_total{method,route,status} and
// <prefix>_http_request_duration_seconds{method,route}.
func requestMetrics(meter metric.Meter, service string) (gin.HandlerFunc, error) {
	prefix := MetricPrefix(service)
	requests, err := meter.Int64Counter(prefix+"_http_requests_total",
		metric.WithDescription("HTTP requests served, by method, route template and status"))
	if err != nil {
		return nil, err
	}
	duration, err := meter.Float64Histogram(prefix+"_http_request_duration_seconds", metric.WithUnit("s"),
		metric.WithDescription("HTTP request duration, by method and route template"),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		ctx := c.Request.Context()
		method := attribute.String("method", c.Request.Method)
		requests.Add(ctx, 1, metric.WithAttributes(method, attribute.String("route", route),
			attribute.String("status", strconv.Itoa(c.Writer.Status()))))
		duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(method, attribute.String("route", route)))
	}, nil
}
