package poller

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/telemetry"
)

// traceDocuments begins a trace of its own for each claimed document, a
// classifier.claim.document span linked to the batch's claim span, and
// gives the document its traceparent: the workers classify it, the
// committer writes its outbox row, and the publisher publishes it as spans
// of that trace, so one trace follows one document from the raw index to
// its Redis message. A batch span cannot be that trace: a trace has one
// root, and a batch's documents each end in a message of their own.
func (p *Poller) traceDocuments(ctx context.Context, docs []*domain.RawContent) {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return // tracing is off: no spans, no traceparents
	}
	link := trace.LinkFromContext(ctx)
	for _, doc := range docs {
		dctx, span := p.tracer.Start(ctx, "classifier.claim.document", trace.WithNewRoot(), trace.WithLinks(link),
			trace.WithAttributes(attribute.String("content_id", doc.ID), attribute.String("index", doc.Index),
				attribute.String("source", doc.SourceName)))
		doc.Traceparent = telemetry.Traceparent(dctx)
		span.End()
	}
}
