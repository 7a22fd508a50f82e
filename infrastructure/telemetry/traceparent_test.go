package telemetry_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/telemetry"
)

// A span's traceparent, carried through a string, makes the next span a
// child in the same trace: the classifier's outbox row and the publisher's
// Redis message rely on it.
func TestTraceparentContinuesTrace(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	p := newProvider(t, telemetry.Config{ServiceName: "test", SpanExporter: spans})
	ctx, parent := p.Tracer("test").Start(context.Background(), "parent")
	tp := telemetry.Traceparent(ctx)
	parent.End()
	want := "00-" + parent.SpanContext().TraceID().String() + "-" + parent.SpanContext().SpanID().String() + "-01"
	if tp != want {
		t.Fatalf("Traceparent() = %q, want %q", tp, want)
	}

	_, child := p.Tracer("test").Start(telemetry.ContextWithTraceparent(context.Background(), tp), "child")
	child.End()
	got := spans.GetSpans()
	if len(got) != 2 {
		t.Fatalf("exported %d spans, want 2", len(got))
	}
	if got[1].Parent.SpanID() != parent.SpanContext().SpanID() || got[1].SpanContext.TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("child parent = %v in trace %v, want span %v of trace %v", got[1].Parent.SpanID(), got[1].SpanContext.TraceID(),
			parent.SpanContext().SpanID(), parent.SpanContext().TraceID())
	}
}

// No span, no traceparent; a malformed or empty one leaves the context alone.
func TestTraceparentAbsent(t *testing.T) {
	t.Parallel()
	if tp := telemetry.Traceparent(context.Background()); tp != "" {
		t.Errorf("Traceparent(no span) = %q, want empty", tp)
	}
	for _, tp := range []string{"", "garbage", "00-zz-yy-01"} {
		ctx := telemetry.ContextWithTraceparent(context.Background(), tp)
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Errorf("ContextWithTraceparent(%q) carries a span context", tp)
		}
	}
}

// OTEL_TRACES_FILE turns tracing on without a collector: every span is in
// the file, one JSON object each, once the provider shuts down.
func TestTracesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "traces.json")
	l := config.NewFromMap(map[string]string{"OTEL_TRACES_FILE": path})
	cfg := telemetry.ConfigFromEnv(l, "test")
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	p, err := telemetry.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer("test").Start(context.Background(), "written.to.file")
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name        string
		SpanContext struct{ TraceID string }
	}
	if err := json.NewDecoder(strings.NewReader(string(data))).Decode(&got); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	if got.Name != "written.to.file" || got.SpanContext.TraceID != span.SpanContext().TraceID().String() {
		t.Errorf("file holds span %q of trace %s, want written.to.file of %s", got.Name, got.SpanContext.TraceID, span.SpanContext().TraceID())
	}
}
