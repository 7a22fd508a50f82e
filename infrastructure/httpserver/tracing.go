package httpserver

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the server spans.
const tracerName = "github.com/north-cloud/infrastructure/httpserver"

// requestTracing starts one server span per request, as otelhttp does, but
// named after the route pattern ("GET /api/v1/rules/:id"), never the raw
// path, so span names stay bounded; a request no route matched is named by
// its method alone. A W3C traceparent header continues the caller's trace.
// The span is in the request's context, so the handler's own spans (and its
// Elasticsearch calls) are its children.
func requestTracing(tp trace.TracerProvider) gin.HandlerFunc {
	tracer := tp.Tracer(tracerName)
	propagator := propagation.TraceContext{}
	return func(c *gin.Context) {
		r := c.Request
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		route := c.FullPath()
		name := r.Method
		attrs := []attribute.KeyValue{
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path),
		}
		if route != "" {
			name += " " + route
			attrs = append(attrs, attribute.String("http.route", route))
		}
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		c.Request = r.WithContext(ctx)
		c.Next()
		status := c.Writer.Status()
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, strconv.Itoa(status))
		}
	}
}
