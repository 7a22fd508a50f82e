package deadletter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of RetryConfig.
const (
	RetryIntervalDefault = 10 * time.Second
	RetryBatchDefault    = 50
	RetryLeaseDefault    = 5 * time.Minute
)

// RetryConfig configures a RetryWorker.
type RetryConfig struct {
	// ReplicaID is written to claimed_by. Required.
	ReplicaID string
	// Interval between looks at the queue. Defaults to RetryIntervalDefault.
	Interval time.Duration
	// Batch is the most entries claimed at once. Defaults to RetryBatchDefault.
	Batch int
	// Lease keeps a claimed entry from other workers. Defaults to RetryLeaseDefault.
	Lease time.Duration
	// SourceBudget is the most retries one source may spend per
	// BudgetWindow, across every replica, so one bad source cannot take the
	// retry capacity of the others; its other due entries wait for the next
	// window. Defaults to SourceBudgetDefault.
	SourceBudget int
	// BudgetWindow is the period of SourceBudget. Defaults to
	// BudgetWindowDefault.
	BudgetWindow time.Duration
	// Breakers are the dependencies a retry needs (Elasticsearch and both
	// databases). While any of them is not closed the worker claims no
	// entry, so an outage spends no retry.
	Breakers []*breaker.Breaker
	// Clock stamps the claims of retried documents. Defaults to the system
	// clock.
	Clock clock.Clock
	// Leases is the claim table the retried documents are claimed in, like
	// the poller's. Required.
	Leases *lease.Store
}

// RetryWorker retries the queue's due entries: it claims them with a lease,
// re-reads their documents from Elasticsearch by id, claims the documents
// and submits them to the worker pool, so a retry takes the same commit path
// as a first attempt. A document that no longer exists is recorded as
// NOT_FOUND and its entry exhausted. It is a lifecycle component.
type RetryWorker struct {
	cfg    RetryConfig
	repo   *Repository
	raw    *rawindex.Store
	sink   claim.Sink
	logger *slog.Logger
	loop   lifecycle.Loop
}

// NewRetryWorker returns a retry worker over repo that re-reads documents
// from raw and submits them to sink.
func NewRetryWorker(cfg RetryConfig, repo *Repository, raw *rawindex.Store, sink claim.Sink, logger *slog.Logger) (*RetryWorker, error) {
	if cfg.ReplicaID == "" || cfg.Leases == nil {
		return nil, errors.New("new retry worker: ReplicaID and Leases are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = RetryIntervalDefault
	}
	if cfg.Batch <= 0 {
		cfg.Batch = RetryBatchDefault
	}
	if cfg.Lease <= 0 {
		cfg.Lease = RetryLeaseDefault
	}
	if cfg.SourceBudget <= 0 {
		cfg.SourceBudget = SourceBudgetDefault
	}
	if cfg.BudgetWindow <= 0 {
		cfg.BudgetWindow = BudgetWindowDefault
	}
	w := &RetryWorker{cfg: cfg, repo: repo, raw: raw, sink: sink, logger: logger.With("component", "dlq_retry")}
	w.loop = lifecycle.Loop{Name: "dead-letter retry worker", Logger: w.logger, Step: lifecycle.Every(cfg.Interval, func(ctx context.Context) {
		if _, err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
			w.logger.ErrorContext(ctx, "dead-letter retry failed", "error", err)
		}
	})}
	return w, nil
}

// Start launches the loop.
func (w *RetryWorker) Start(ctx context.Context) error { return w.loop.Start(ctx) }

// Stop ends the loop, bounded by ctx. Entries it claimed but did not submit
// come due again when their lease passes.
func (w *RetryWorker) Stop(ctx context.Context) error { return w.loop.Stop(ctx) }

// RunOnce retries the entries due now and returns how many documents it
// submitted.
func (w *RetryWorker) RunOnce(ctx context.Context) (int, error) {
	size := min(w.cfg.Batch, w.sink.FreeSlots())
	if size <= 0 || w.sink.ShouldThrottle() {
		return 0, nil
	}
	if ok, b := breaker.AllClosed(w.cfg.Breakers...); !ok {
		w.logger.DebugContext(ctx, "dead-letter retries paused: dependency unavailable", "dependency", b.Name())
		return 0, nil
	}
	claim, err := w.repo.FetchRetryable(ctx, ClaimRequest{Limit: size, Lease: w.cfg.Lease, SourceBudget: w.cfg.SourceBudget, Window: w.cfg.BudgetWindow})
	if err != nil || len(claim.Entries) == 0 {
		return 0, err
	}
	entries := claim.Entries
	refs := make([]domain.DocKey, 0, len(entries))
	byKey := make(map[domain.DocKey]*domain.DeadLetterEntry, len(entries))
	for i := range entries {
		e := &entries[i]
		if !e.ShouldRetry() {
			continue
		}
		refs = append(refs, e.Key())
		byKey[e.Key()] = e
		w.logger.DebugContext(ctx, "retrying dead-lettered document", "entry", e.String(), "delay_if_it_fails", e.NextRetryDelay().String())
	}
	found, missing, err := w.raw.Get(ctx, refs)
	if err != nil {
		return 0, fmt.Errorf("re-read dead-lettered documents: %w", err)
	}
	for _, m := range missing {
		if err := w.gone(ctx, byKey[m]); err != nil {
			return 0, err
		}
	}
	won, err := w.cfg.Leases.ClaimDocs(ctx, found, 0)
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

// gone records that the document of e no longer exists: the failure is
// NOT_FOUND, one more attempt, and the entry is exhausted at once (retrying
// a document that is not there cannot succeed); it stays visible, and an
// operator who restores the document can requeue it.
func (w *RetryWorker) gone(ctx context.Context, e *domain.DeadLetterEntry) error {
	e.ErrorCode = domain.ErrorCodeNotFound
	e.IncrementRetry(fmt.Sprintf("raw document %s/%s no longer exists", e.IndexName, e.ContentID))
	w.logger.WarnContext(ctx, "dead-lettered document no longer exists", "content_id", e.ContentID, "index", e.IndexName, "entry", e.String())
	if err := w.repo.Enqueue(ctx, e); err != nil {
		return err
	}
	if err := w.repo.MarkExhausted(ctx, e.Key()); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}
