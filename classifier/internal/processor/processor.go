// Package processor classifies a claimed batch and commits it: classified
// documents, history rows and outbox rows first, the raw status flip last.
// Every write before the flip is idempotent, so a crash anywhere before it
// only means the batch is picked up again after the claim lease.
package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/contentindex"
)

// Failure reasons, used as the reason label of
// classifier_documents_failed_total and in logs.
const (
	ReasonUnprocessable = "unprocessable"
	ReasonPanic         = "panic"
	ReasonESWrite       = "es_write"
	ReasonHistory       = "history_write"
	ReasonOutbox        = "outbox_write"
	ReasonCommit        = "status_flip"
)

// Stores are the processor's outputs.
type Stores struct {
	Content *storage.ContentStore
	History *storage.HistoryRepository
	Outbox  *storage.OutboxWriter
}

// Processor is a poller.Handler.
type Processor struct {
	classifier *pipeline.Classifier
	stores     Stores
	metrics    *telemetry.Metrics
	tracer     trace.Tracer
	logger     *slog.Logger
}

// New returns a Processor.
func New(c *pipeline.Classifier, stores Stores, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) *Processor {
	return &Processor{classifier: c, stores: stores, metrics: metrics, tracer: tracer, logger: logger.With("component", "processor")}
}

// item pairs a claimed raw document with its classification.
type item struct {
	raw *domain.RawContent
	doc *domain.ClassifiedContent
}

// Handle classifies and commits batch. One failing document never fails the
// others: it is failed (unprocessable) or left claimed for the lease to
// return it (a write failed), with a log line and a metric either way.
func (p *Processor) Handle(ctx context.Context, batch []*domain.RawContent) {
	ctx, span := p.tracer.Start(ctx, "classifier.batch", trace.WithAttributes(attribute.Int("batch_size", len(batch))))
	defer span.End()

	var changes []storage.StatusChange
	items := make([]item, 0, len(batch))
	for _, raw := range batch {
		if !raw.CrawledAt.IsZero() {
			p.metrics.PollerLag.Record(ctx, time.Since(raw.CrawledAt).Seconds())
		}
		doc, err := p.classify(ctx, raw)
		if err != nil {
			reason := ReasonUnprocessable
			if !errors.Is(err, pipeline.ErrUnprocessable) {
				reason = ReasonPanic
			}
			p.fail(ctx, raw, reason, err)
			changes = append(changes, storage.StatusChange{Raw: raw, Status: contentindex.StatusFailed, Reason: err.Error()})
			continue
		}
		items = append(items, item{raw: raw, doc: doc})
	}
	for _, it := range p.write(ctx, items) {
		changes = append(changes, storage.StatusChange{Raw: it.raw, Status: contentindex.StatusClassified})
	}
	p.flip(ctx, changes)
}

// classify runs the pipeline for one document; a panic becomes an error so
// that one poison document cannot take down the batch or the process.
func (p *Processor) classify(ctx context.Context, raw *domain.RawContent) (doc *domain.ClassifiedContent, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			p.logger.ErrorContext(ctx, "classification panicked", "content_id", raw.ID, "source", raw.SourceName,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			doc, err = nil, fmt.Errorf("classification panicked: %v", r)
		}
		p.metrics.ProcessingDuration.Record(ctx, time.Since(start).Seconds(), sourceAttr(raw.SourceName))
	}()
	return p.classifier.Classify(raw)
}

// write stores the classified documents in Elasticsearch, then history and
// outbox rows for those written. It returns the items whose writes all
// succeeded: only they may be flipped to classified.
func (p *Processor) write(ctx context.Context, items []item) []item {
	if len(items) == 0 {
		return nil
	}
	docs := make([]*domain.ClassifiedContent, len(items))
	for i, it := range items {
		docs[i] = it.doc
	}
	results, err := p.stores.Content.WriteClassified(ctx, docs)
	if err != nil {
		p.failAll(ctx, items, ReasonESWrite, err)
		return nil
	}
	written := items[:0]
	for i, r := range results {
		if r.Err != nil {
			p.fail(ctx, items[i].raw, ReasonESWrite, r.Err)
			continue
		}
		written = append(written, items[i])
	}
	docs = docs[:0]
	for _, it := range written {
		docs = append(docs, it.doc)
	}
	if err := p.stores.History.InsertBatch(ctx, docs); err != nil {
		p.failAll(ctx, written, ReasonHistory, err)
		return nil
	}
	if err := p.stores.Outbox.WriteBatch(ctx, docs); err != nil {
		p.failAll(ctx, written, ReasonOutbox, err)
		return nil
	}
	return written
}

// flip moves the documents to their final status: the commit point.
func (p *Processor) flip(ctx context.Context, changes []storage.StatusChange) {
	if len(changes) == 0 {
		return
	}
	results, err := p.stores.Content.FlipStatus(ctx, changes)
	if err != nil {
		for _, c := range changes {
			p.fail(ctx, c.Raw, ReasonCommit, err)
		}
		return
	}
	for i, r := range results {
		c := changes[i]
		if r.Err != nil {
			p.fail(ctx, c.Raw, ReasonCommit, r.Err)
			continue
		}
		if c.Status == contentindex.StatusClassified {
			p.metrics.DocumentsProcessed.Add(ctx, 1, sourceAttr(c.Raw.SourceName))
			if !c.Raw.CrawledAt.IsZero() {
				p.metrics.ClassificationLag.Record(ctx, time.Since(c.Raw.CrawledAt).Seconds())
			}
		}
	}
}

func (p *Processor) failAll(ctx context.Context, items []item, reason string, err error) {
	for _, it := range items {
		p.fail(ctx, it.raw, reason, err)
	}
}

// fail records a document that did not reach classified: a metric with the
// reason and a log line. Unprocessable documents are flipped to failed by the
// caller; for every other reason the document stays claimed and the lease
// returns it to the poll.
func (p *Processor) fail(ctx context.Context, raw *domain.RawContent, reason string, err error) {
	p.metrics.DocumentsFailed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", raw.SourceName), attribute.String("reason", reason)))
	level := slog.LevelError
	if reason == ReasonUnprocessable {
		level = slog.LevelWarn
	}
	p.logger.Log(ctx, level, "document not classified", "content_id", raw.ID, "source", raw.SourceName,
		"index", raw.Index, "reason", reason, "error", err)
}

func sourceAttr(source string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("source", source))
}
