package storage

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/fault"
	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/telemetry"
)

// outboxTracer is the instrumentation scope of the outbox write span.
const outboxTracer = "github.com/north-cloud/classifier/internal/storage"

// OutboxWriter inserts classified documents into the publisher's outbox
// table. It connects as a role that may only INSERT there. The row, its
// columns and the insert are the shared contract of package outbox; this
// writer only maps a classified document onto an outbox.Message.
type OutboxWriter struct {
	db     *sql.DB
	logger *slog.Logger
}

// NewOutboxWriter returns a writer over the publisher's database; logger
// takes the line of a wake-up that could not be sent.
func NewOutboxWriter(db *sql.DB, logger *slog.Logger) *OutboxWriter {
	return &OutboxWriter{db: db, logger: logger.With("component", "outbox_writer")}
}

// Ping proves the publisher's database answers (a SELECT 1): the probe of
// an outage when a write's error does not tell (fault.Proved).
func (w *OutboxWriter) Ping(ctx context.Context) error { return fault.PingPostgres(w.db)(ctx) }

// Write inserts the outbox row of one classified document, as WriteBatch
// does: the row of a version already in the outbox is left as it is. The
// raw index travels with the document (doc.Index), as a content id is
// unique only within its index.
func (w *OutboxWriter) Write(ctx context.Context, doc *domain.ClassifiedContent) error {
	return w.WriteBatch(ctx, []*domain.ClassifiedContent{doc})
}

// WriteBatch inserts one outbox row per document (outbox.InsertBatch), as
// the version the committer decided (package republish), then wakes the
// publishers (outbox.Wake) once the rows are committed. A version already
// in the outbox is left as it is (ON CONFLICT DO NOTHING): a document
// classified again after a crash before its commit point is not published
// twice.
//
// The insert is a span, classifier.outbox.write, a child of the span in ctx
// (the committer's) made by that span's own provider, so the writer needs
// no tracer of its own; each row carries its traceparent, and the publisher
// continues that trace when it publishes the row.
func (w *OutboxWriter) WriteBatch(ctx context.Context, docs []*domain.ClassifiedContent) (err error) {
	if len(docs) == 0 {
		return nil
	}
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(outboxTracer).Start(ctx, "classifier.outbox.write",
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.Int("outbox.rows", len(docs))))
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "insert")
		}
		span.End()
	}()
	traceparent := telemetry.Traceparent(ctx)
	msgs := make([]outbox.Message, len(docs))
	for i, d := range docs {
		tp := traceparent
		if d.Traceparent != "" {
			tp = rowSpan(ctx, d)
		}
		msgs[i] = outbox.Message{
			ContentID: d.ID, SourceName: d.SourceName, IndexName: d.Index,
			ContentType: d.ContentType, Topics: d.Topics, QualityScore: d.QualityScore,
			IsCrimeRelated: d.IsCrimeRelated, CrimeSubcategory: d.CrimeSubcategory,
			Title: d.Title, Body: d.RawText, URL: d.URL, PublishedDate: d.PublishedDate,
			Version: d.Version, ChangedFields: d.ChangedFields, CanonicalURL: d.CanonicalURL,
			Traceparent: tp, PrimaryTopic: d.PrimaryTopic, PrimaryTopicConfidence: d.PrimaryTopicConfidence,
		}
		if d.DuplicateOf != nil {
			msgs[i].DuplicateOf = &outbox.DocRef{Index: d.DuplicateOf.Index, ID: d.DuplicateOf.ID, Kind: d.DuplicateOf.Kind}
		}
	}
	if err := outbox.InsertBatch(ctx, w.db, msgs); err != nil {
		return fmt.Errorf("write outbox: %w", err)
	}
	// The rows are committed (the insert is its own transaction); a wake-up
	// that fails only leaves them to the publishers' next fallback poll, so
	// the write stands.
	if err := outbox.Wake(ctx, w.db); err != nil {
		span.AddEvent("wake failed")
		w.logger.WarnContext(ctx, "outbox rows written but the publishers not woken: they find them at their next poll",
			"rows", len(msgs), "error", err)
	}
	return nil
}

// rowSpan records a document's outbox row in the document's own trace (its
// Traceparent, begun at its claim): a classifier.outbox.row span, child of
// the document's claim span and linked to the batch's insert span in ctx.
// It returns the row's traceparent, which the publisher continues.
func rowSpan(ctx context.Context, d *domain.ClassifiedContent) string {
	dctx := telemetry.ContextWithTraceparent(context.WithoutCancel(ctx), d.Traceparent)
	dctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(outboxTracer).Start(dctx, "classifier.outbox.row",
		trace.WithLinks(trace.LinkFromContext(ctx)), trace.WithAttributes(
			attribute.String("content_id", d.ID), attribute.String("index", d.Index), attribute.Int("version", d.Version)))
	defer span.End()
	return telemetry.Traceparent(dctx)
}
