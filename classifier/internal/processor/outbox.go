package processor

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
)

// OutboxWriter is classified_outbox in the publisher's database
// (storage.OutboxWriter in the service), as the committer uses it.
type OutboxWriter interface {
	WriteBatch(ctx context.Context, docs []*domain.ClassifiedContent) error
	Ping(ctx context.Context) error
}

// outbox hands news to the publisher: before a batch is written, hygiene
// decides which of its documents are news (decide); once they are stored,
// their rows go to the outbox and their outcomes are recorded (publish).
type outbox struct {
	store   OutboxWriter
	breaker *breaker.Breaker // guards the publisher's database
	// hygiene decides which documents are news; nil publishes every
	// document as version 1.
	hygiene *Hygiene
	db      database // the classifier's, where hygiene keeps its records
	claims  claims   // releases the URL duplicates requeued
	metrics *telemetry.Metrics
	logger  *slog.Logger
}

// decide fills the publication fields of rs's documents (Hygiene.decide,
// isolate): it returns those decided and those refused alone; held when
// the classifier's database is out.
func (o *outbox) decide(ctx context.Context, rs []Result) (decided, failed []Result, held bool) {
	return isolate(ctx, o.logger, rs, statement{name: "decide", db: o.db, run: rowsOf(o.hygiene.decide)})
}

// publish writes the outbox rows of the news among stored and records
// their outcomes. Only news goes to the outbox: a duplicate held back or
// an unchanged outcome is written and flipped like the rest, without a row.
// It returns the results to flip and those refused alone; held, when set,
// is the breaker of the database that is out, and the caller holds all of
// stored (failed then holds what was refused before the outage).
func (o *outbox) publish(ctx context.Context, stored []Result) (written, failed []Result, held *breaker.Breaker) {
	var news, quiet []Result
	for _, r := range stored {
		if r.Doc.Publish {
			news = append(news, r)
		} else {
			quiet = append(quiet, r)
		}
	}
	news, quiet = o.dropSuperseded(ctx, news, quiet)
	outboxDB := database{breaker: o.breaker, probe: o.store.Ping}
	news, failed, out := isolate(ctx, o.logger, news, statement{name: "outbox", db: outboxDB, run: rowsOf(o.store.WriteBatch)})
	if out {
		return nil, nil, o.breaker
	}
	// The rows are in the outbox; a row whose outcome cannot be recorded
	// fails with its error, and written again on its retry it is absorbed
	// (same version) and the record is tried again.
	news, f, out := isolate(ctx, o.logger, news, statement{name: "republish", db: o.db, run: rowsOf(o.hygiene.record)})
	failed = append(failed, f...)
	if out {
		return nil, failed, o.db.breaker
	}
	written = append(news, quiet...)
	o.count(ctx, written)
	return written, failed, nil
}

// dropSuperseded moves from news to quiet the results whose document
// another attempt has decided a newer version of since this one planned
// (a replica that took it over while this one was paused): their outcome
// is stale and is not written to the outbox; the flip that follows is
// refused for them as taken over. When the check cannot be made, news is
// kept as it is (the outbox absorbs a version written twice).
func (o *outbox) dropSuperseded(ctx context.Context, news, quiet []Result) ([]Result, []Result) {
	if o.hygiene == nil || len(news) == 0 {
		return news, quiet
	}
	_, stale, err := o.hygiene.superseded(ctx, docsOf(news))
	if err != nil {
		o.logger.WarnContext(ctx, "newer versions not checked before the outbox write", "documents", len(news), "error", err)
		return news, quiet
	}
	if len(stale) == 0 {
		return news, quiet
	}
	isStale := make(map[*domain.ClassifiedContent]bool, len(stale))
	for _, d := range stale {
		isStale[d] = true
	}
	kept := news[:0:0]
	for _, r := range news {
		if !isStale[r.Doc] {
			kept = append(kept, r)
			continue
		}
		r.Doc.Publish = false
		quiet = append(quiet, r)
		o.logger.WarnContext(ctx, "outcome superseded by another attempt's newer version; not written to the outbox",
			"content_id", r.Raw.ID, "source", r.Raw.SourceName, "version", r.Doc.Version)
	}
	return kept, quiet
}

// count logs the batch's duplicates and counts its publication decisions.
func (o *outbox) count(ctx context.Context, written []Result) {
	for _, r := range written {
		d := r.Doc
		if d.DuplicateOf != nil {
			o.logger.DebugContext(ctx, "duplicate recorded", "index", d.RawIndex, "id", d.ID,
				"kind", d.DuplicateOf.Kind, "duplicate_of_index", d.DuplicateOf.Index, "duplicate_of_id", d.DuplicateOf.ID,
				"published", d.Publish)
		}
		o.metrics.RecordHygiene(ctx, d.SourceName, duplicateKind(d), d.Publish, d.Version)
	}
}

// requeueOrphans returns written without the URL duplicates held back
// behind a claimant of their own batch that failed (heldBehindFailed), and
// leaves those pending, their claims released, so the next poll classifies
// them again: the failed claimant holds the URL only provisionally now, so
// they are published, flagged with duplicate_of, instead of vanishing
// behind a document in the dead-letter queue. A release that fails leaves
// them to their lease.
func (o *outbox) requeueOrphans(ctx context.Context, written, failed []Result) []Result {
	written, orphans := heldBehindFailed(written, failed)
	if len(orphans) == 0 {
		return written
	}
	raws := make([]*domain.RawContent, len(orphans))
	for i, r := range orphans {
		raws[i] = r.Raw
		o.logger.WarnContext(ctx, "URL duplicate requeued: the claimant it was held back behind failed in the same batch",
			"content_id", r.Raw.ID, "index", r.Raw.Index, "source", r.Raw.SourceName,
			"claimant_id", r.Doc.DuplicateOf.ID, "reason", requeueClaimantFailed)
		o.metrics.DocumentsRequeued.Add(ctx, 1, metric.WithAttributes(
			attribute.String("source", r.Raw.SourceName), attribute.String("reason", requeueClaimantFailed)))
	}
	o.claims.release(ctx, raws, "requeued")
	return written
}
