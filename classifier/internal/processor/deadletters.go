package processor

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
)

// DeadLetterQueue is dead_letter_queue (deadletter.Repository in the
// service), as the committer uses it: failures are recorded in it, and the
// entries of documents since committed are resolved.
type DeadLetterQueue interface {
	EnqueueBatch(ctx context.Context, entries []domain.DeadLetterEntry) ([]deadletter.Recorded, error)
	Remove(ctx context.Context, docs ...domain.DocKey) (int64, error)
}

// deadLetters counts a batch's failures and parks them in the dead-letter
// queue.
type deadLetters struct {
	queue   DeadLetterQueue // nil: the DLQ is disabled
	db      database
	metrics *telemetry.Metrics
	logger  *slog.Logger
}

// report counts and logs the batch's failures, once each.
func (d *deadLetters) report(ctx context.Context, failed []Result) {
	for _, r := range failed {
		d.metrics.DocumentsFailed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", r.Raw.SourceName), attribute.String("error_code", string(r.Code))))
		level := slog.LevelError
		if r.Code == domain.ErrorCodeValidation {
			level = slog.LevelWarn
		}
		d.logger.Log(ctx, level, "document not classified", "content_id", r.Raw.ID, "source", r.Raw.SourceName,
			"index", r.Raw.Index, "error_code", r.Code, "error", r.Err)
	}
}

// park records failures in the DLQ and returns those that may now be
// flipped to failed, and those to record again once dep answers. Without a
// DLQ only validation failures are flipped (with their reason); other
// failures stay claimed for the lease to retry.
//
// The record follows the committer's one rule (isolate): an outage of the
// database holds the failures; any other error is bisected down to the
// entry, and an entry the queue refuses even alone is flipped to failed
// with its reason and the queue's refusal (logged, and counted in
// classifier_dlq_write_failures_total), visible and re-queueable in the
// raw index instead of held for ever.
func (d *deadLetters) park(ctx context.Context, failed []Result) (parked, retry []Result, dep *breaker.Breaker) {
	if d.queue == nil {
		for _, r := range failed {
			if r.Code == domain.ErrorCodeValidation {
				parked = append(parked, r)
			}
		}
		return parked, nil, nil
	}
	var recorded []deadletter.Recorded
	record := statement{name: "dead_letter", db: d.db,
		run: func(ctx context.Context, rs []Result) error {
			entries := make([]domain.DeadLetterEntry, len(rs))
			for i, r := range rs {
				entries[i] = domain.DeadLetterEntry{ContentID: r.Raw.ID, SourceName: r.Raw.SourceName, IndexName: r.Raw.Index, ErrorCode: r.Code, ErrorMessage: r.Err.Error()}
			}
			recs, err := d.queue.EnqueueBatch(ctx, entries)
			recorded = append(recorded, recs...)
			return err
		},
		fail: func(r Result, err error) Result {
			d.metrics.DLQWriteFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("source", r.Raw.SourceName), attribute.String("error_code", string(r.Code))))
			d.logger.ErrorContext(ctx, "dead-letter queue refused the document; it is flipped to failed with its reason instead",
				"content_id", r.Raw.ID, "source", r.Raw.SourceName, "index", r.Raw.Index, "error_code", r.Code, "error", r.Err, "dlq_error", err)
			r.Err = fmt.Errorf("%w (not in the dead-letter queue: %v)", r.Err, err)
			return r
		},
	}
	ok, refused, held := isolate(ctx, d.logger, failed, record)
	if held {
		return nil, failed, d.db.breaker
	}
	for _, rec := range recorded {
		if rec.Inserted {
			d.metrics.DLQEnqueued.Add(ctx, 1)
		}
		if rec.Exhausted {
			d.metrics.DLQExhausted.Add(ctx, 1)
			d.logger.ErrorContext(ctx, "dead-letter entry exhausted its retries", "content_id", rec.ContentID, "index", rec.Index)
		}
	}
	return append(ok, refused...), nil, nil
}
