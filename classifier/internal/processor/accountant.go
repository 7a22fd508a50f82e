package processor

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/contentindex"
)

// ReputationRecorder is source_reputation (reputation.Repository in the
// service), as the committer uses it.
type ReputationRecorder interface {
	Add(ctx context.Context, deltas map[string]reputation.Delta) error
}

// deadLetterResolver removes the dead-letter entries of documents since
// committed (DeadLetterQueue.Remove).
type deadLetterResolver interface {
	Remove(ctx context.Context, docs ...domain.DocKey) (int64, error)
}

// accountant records what a committed batch means once it is flipped.
type accountant struct {
	deadLetters deadLetterResolver // nil: the DLQ is disabled
	reputation  ReputationRecorder // nil: reputation is off
	metrics     *telemetry.Metrics
	logger      *slog.Logger
}

// account records what a committed batch means: metrics, resolved
// dead-letter entries, and source statistics.
func (a *accountant) account(ctx context.Context, flipped []rawindex.Change) {
	var resolved []domain.DocKey
	retried := 0
	deltas := map[string]reputation.Delta{}
	for _, ch := range flipped {
		src := ch.Raw.SourceName
		d := deltas[src]
		d.Total++
		if ch.Status == contentindex.StatusClassified {
			resolved = append(resolved, domain.DocKey{Index: ch.Raw.Index, ID: ch.Raw.ID})
			if ch.Raw.FromDLQ {
				retried++
			}
			a.metrics.DocumentsProcessed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", src)))
			if !ch.Raw.CrawledAt.IsZero() {
				a.metrics.ClassificationLag.Record(ctx, time.Since(ch.Raw.CrawledAt).Seconds())
			}
			d.Classified++
			if doc := ch.Doc; doc != nil {
				d.QualitySum += int64(doc.QualityScore)
				if doc.IsCrimeRelated {
					d.Crime++
				}
			}
		} else {
			d.Failed++
		}
		deltas[src] = d
	}
	if a.deadLetters != nil && len(resolved) > 0 {
		n, err := a.deadLetters.Remove(ctx, resolved...)
		if err != nil {
			a.logger.ErrorContext(ctx, "resolving dead-letter entries failed; they will be retried and resolve then", "error", err)
		} else if n > 0 {
			a.metrics.DLQProcessed.Add(ctx, n)
		}
	}
	if retried > 0 {
		a.metrics.DocumentsRetried.Add(ctx, int64(retried))
	}
	if a.reputation != nil {
		if err := a.reputation.Add(ctx, deltas); err != nil {
			a.logger.ErrorContext(ctx, "source reputation update failed", "sources", len(deltas), "error", err)
		}
	}
}
