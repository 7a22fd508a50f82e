package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// traceparentKey is the W3C Trace Context header (and field) name.
const traceparentKey = "traceparent"

// Traceparent returns the W3C traceparent of the span in ctx
// ("00-<trace id>-<span id>-<flags>"), or "" when ctx carries no valid span
// context. It is what a record or message stores so that whoever handles it
// later continues the same trace: the classifier writes it into the outbox
// row, the publisher into the Redis message.
func Traceparent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier[traceparentKey]
}

// ContextWithTraceparent returns ctx carrying the remote span context tp
// names, so spans started from it join tp's trace as its children. An empty
// or malformed tp leaves ctx as it is.
func ContextWithTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{traceparentKey: tp})
}
