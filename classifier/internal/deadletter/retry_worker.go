// Package retry runs the dead-letter queue's retry worker: due entries are
// claimed with a lease, their documents re-read from Elasticsearch by id,
// claimed, and sent through the normal worker pool and commit path, which
// resolves the entry on success and records the next failure otherwise.
package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of Config.
const (
	IntervalDefault = 10 * time.Second
	BatchDefault    = 50
	LeaseDefault    = 5 * time.Minute
)

// Config configures a Worker.
type Config struct {
	// ReplicaID is written to claimed_by. Required.
	ReplicaID string
	// Interval between looks at the queue. Defaults to IntervalDefault.
	Interval time.Duration
	// Batch is the most entries claimed at once. Defaults to BatchDefault.
	Batch int
	// Lease keeps a claimed entry from other workers. Defaults to LeaseDefault.
	Lease time.Duration
	// Breakers are the dependencies a retry needs (Elasticsearch and both
	// databases). While any of them is not closed the worker claims no
	// entry, so an outage spends no retry.
	Breakers []*breaker.Breaker
}

// Worker is a lifecycle component.
type Worker struct {
	cfg    Config
	repo   *deadletter.Repository
	store  *storage.ContentStore
	sink   claim.Sink
	logger *slog.Logger
	now    func() time.Time
	loop   lifecycle.Loop
}

// New returns a retry worker that submits to sink.
func New(cfg Config, repo *deadletter.Repository, store *storage.ContentStore, sink claim.Sink, logger *slog.Logger) (*Worker, error) {
	if cfg.ReplicaID == "" {
		return nil, errors.New("new retry worker: ReplicaID is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = IntervalDefault
	}
	if cfg.Batch <= 0 {
		cfg.Batch = BatchDefault
	}
	if cfg.Lease <= 0 {
		cfg.Lease = LeaseDefault
	}
	w := &Worker{cfg: cfg, repo: repo, store: store, sink: sink, logger: logger.With("component", "dlq_retry"), now: time.Now}
	w.loop = lifecycle.Loop{Name: "dead-letter retry worker", Logger: w.logger, Step: lifecycle.Every(cfg.Interval, func(ctx context.Context) {
		if _, err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
			w.logger.ErrorContext(ctx, "dead-letter retry failed", "error", err)
		}
	})}
	return w, nil
}

// Start launches the loop.
func (w *Worker) Start(ctx context.Context) error { return w.loop.Start(ctx) }

// Stop ends the loop, bounded by ctx. Entries it claimed but did not submit
// come due again when their lease passes.
func (w *Worker) Stop(ctx context.Context) error { return w.loop.Stop(ctx) }

// RunOnce retries the entries due now and returns how many documents it
// submitted.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	size := min(w.cfg.Batch, w.sink.FreeSlots())
	if size <= 0 || w.sink.ShouldThrottle() {
		return 0, nil
	}
	if ok, b := breaker.AllClosed(w.cfg.Breakers...); !ok {
		w.logger.DebugContext(ctx, "dead-letter retries paused: dependency unavailable", "dependency", b.Name())
		return 0, nil
	}
	entries, err := w.repo.ClaimDue(ctx, size, w.cfg.Lease)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	refs := make([]domain.DocKey, len(entries))
	byKey := make(map[domain.DocKey]domain.DeadLetterEntry, len(entries))
	for i, e := range entries {
		refs[i] = domain.DocKey{Index: e.IndexName, ID: e.ContentID}
		byKey[refs[i]] = e
	}
	found, missing, err := w.store.GetRaw(ctx, refs)
	if err != nil {
		return 0, fmt.Errorf("re-read dead-lettered documents: %w", err)
	}
	if len(missing) > 0 {
		failures := make([]domain.Failure, len(missing))
		for i, m := range missing {
			e := byKey[m]
			failures[i] = domain.Failure{ContentID: m.ID, Source: e.SourceName, Index: m.Index, Code: domain.ErrorCodeNotFound,
				Message: fmt.Sprintf("raw document %s/%s no longer exists", m.Index, m.ID)}
			w.logger.WarnContext(ctx, "dead-lettered document no longer exists", "content_id", m.ID, "index", m.Index)
		}
		if _, err := w.repo.Record(ctx, failures); err != nil {
			return 0, err
		}
	}
	won, err := w.store.Claim(ctx, w.cfg.ReplicaID, found, w.now().UTC())
	if err != nil {
		return 0, fmt.Errorf("claim dead-lettered documents: %w", err)
	}
	submitted := 0
	for _, doc := range won {
		doc.FromDLQ = true
		if err := w.sink.Submit(ctx, doc); err != nil {
			w.logger.WarnContext(ctx, "work queue refused a retried document; it returns after the lease", "content_id", doc.ID, "error", err)
			continue
		}
		submitted++
	}
	if submitted > 0 {
		w.logger.InfoContext(ctx, "retrying dead-lettered documents", "documents", submitted, "claimed", len(entries))
	}
	return submitted, nil
}
