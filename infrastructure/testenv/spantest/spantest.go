// Package spantest gives a test a tracer provider whose spans it can read
// back. It is apart from testenv so that only the modules whose tests read
// spans depend on the OpenTelemetry SDK.
package spantest

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// New returns a tracer provider that hands each span to an in-memory
// exporter as it ends, and that exporter; the provider is shut down when
// the test ends. A test passes the provider to the code under test and
// reads the spans it made from the exporter.
func New(t testing.TB) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, spans
}
