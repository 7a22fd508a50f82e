package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	infratelemetry "github.com/north-cloud/infrastructure/telemetry"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/worker"
)

// A row the classifier wrote with a traceparent is published in that trace:
// the publish span is a child of the classifier's span, and the Redis
// message's traceparent names the publish span, so a consumer continues the
// document's trace.
func TestPublishContinuesRowTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	spans := tracetest.NewInMemoryExporter()
	tp, err := infratelemetry.New(context.Background(), infratelemetry.Config{ServiceName: "publisher-test", SpanExporter: spans})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rdb := testenv.Redis(t)
	sub := outboxtest.Subscribe(t, rdb)
	prefix := testenv.UniqueName("traced")
	rows := outboxtest.Rows(prefix, 2)
	const traceID, classifierSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	rows[0].Traceparent = "00-" + traceID + "-" + classifierSpan + "-01"
	outboxtest.Insert(t, b.db, rows)

	w, err := worker.New(worker.Config{ListenURL: b.dsn, PollInterval: 200 * time.Millisecond}, b.repo, redisSink(t, rdb), b.metrics, tp.Tracer("publisher"), testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	for _, r := range rows {
		outboxtest.WaitFor(t, time.Minute, "message for "+r.ContentID, func() bool { return len(sub.Messages(r.ContentID)) > 0 })
	}

	traced := sub.Messages(rows[0].ContentID)[0]
	got, _ := traced["traceparent"].(string)
	parts := strings.Split(got, "-")
	if len(parts) != 4 || parts[1] != traceID || parts[2] == classifierSpan {
		t.Fatalf("message traceparent = %q, want the publish span's in trace %s", got, traceID)
	}
	var publish *tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == "publisher.publish" && s.SpanContext.SpanID().String() == parts[2] {
			publish = &s
		}
	}
	if publish == nil {
		t.Fatalf("no publisher.publish span %s among the exported spans", parts[2])
	}
	if publish.Parent.TraceID().String() != traceID || publish.Parent.SpanID().String() != classifierSpan {
		t.Errorf("publish span's parent = %s/%s, want the row's %s/%s", publish.Parent.TraceID(), publish.Parent.SpanID(), traceID, classifierSpan)
	}
	if len(publish.Links) != 1 {
		t.Errorf("publish span has %d links, want 1 (its batch)", len(publish.Links))
	}
	// The worker traces, so an untraced row's message names its publish
	// span too, in a trace of its own (under the batch).
	untraced, _ := sub.Messages(rows[1].ContentID)[0]["traceparent"].(string)
	if untraced == "" || strings.Contains(untraced, traceID) {
		t.Errorf("untraced row's message traceparent = %q, want a trace of its own", untraced)
	}
}
