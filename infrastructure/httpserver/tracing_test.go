package httpserver

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/infrastructure/testenv/spantest"
)

// Every request gets one server span named after its route pattern (never
// the raw path), a handler's spans are its children, a panic is an error
// span, and an incoming traceparent continues the caller's trace.
func TestRequestSpansPerRoute(t *testing.T) {
	t.Parallel()
	tp, spans := spantest.New(t)
	srv, err := New(Config{Addr: ":0", ServiceName: "index-manager", TracerProvider: tp},
		slog.New(slog.NewTextHandler(io.Discard, nil)), http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	srv.Router().GET("/api/v1/indices/:name", func(c *gin.Context) {
		_, child := tp.Tracer("handler").Start(c, "handler.work")
		child.End()
		c.Status(http.StatusNoContent)
	})
	srv.Router().GET("/boom", func(*gin.Context) { panic("boom") })

	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/indices/secret_one", nil)
	req.Header.Set("traceparent", "00-"+caller.TraceID().String()+"-"+caller.SpanID().String()+"-01")
	srv.Router().ServeHTTP(httptest.NewRecorder(), req)
	srv.Router().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/boom", nil))
	srv.Router().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/nowhere", nil))

	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byName[s.Name] = s
	}
	if len(byName) != 4 {
		t.Fatalf("spans = %v, want handler.work, GET /api/v1/indices/:name, GET /boom, GET", keys(byName))
	}
	route, ok := byName["GET /api/v1/indices/:name"]
	if !ok {
		t.Fatalf("no span named after the route pattern; spans = %v", keys(byName))
	}
	if route.SpanKind != trace.SpanKindServer || route.Parent.SpanID() != caller.SpanID() || route.SpanContext.TraceID() != caller.TraceID() {
		t.Errorf("route span kind %v parent %v trace %v, want a server span under the caller's traceparent", route.SpanKind, route.Parent.SpanID(), route.SpanContext.TraceID())
	}
	if !hasAttr(route.Attributes, attribute.Int("http.response.status_code", http.StatusNoContent)) ||
		!hasAttr(route.Attributes, attribute.String("http.route", "/api/v1/indices/:name")) {
		t.Errorf("route span attributes = %v", route.Attributes)
	}
	if work := byName["handler.work"]; work.Parent.SpanID() != route.SpanContext.SpanID() {
		t.Errorf("handler span's parent = %v, want the request span %v", work.Parent.SpanID(), route.SpanContext.SpanID())
	}
	if boom := byName["GET /boom"]; boom.Status.Code != codes.Error {
		t.Errorf("panicking route's span status = %v, want Error", boom.Status)
	}
	if _, ok := byName["GET"]; !ok {
		t.Errorf("an unmatched request's span is not named by its method alone; spans = %v", keys(byName))
	}
}

func keys(m map[string]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func hasAttr(attrs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, a := range attrs {
		if a == want {
			return true
		}
	}
	return false
}
