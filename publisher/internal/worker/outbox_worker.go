// Package worker drains the outbox into Redis pub/sub.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/publisher/internal/domain"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/telemetry"
)

// Defaults of Config (spec 4.4).
const (
	PollIntervalDefault   = 5 * time.Second
	BatchSizeDefault      = 100
	PublishTimeoutDefault = 10 * time.Second
	StaleAfterDefault     = 5 * time.Minute
)

// Config configures an OutboxWorker.
type Config struct {
	// PollInterval is the wait after an empty or partial batch.
	// Defaults to PollIntervalDefault.
	PollInterval time.Duration
	// BatchSize is the number of rows claimed at once. Defaults to BatchSizeDefault.
	BatchSize int
	// PublishTimeout bounds one pipelined publish of a batch.
	// Defaults to PublishTimeoutDefault.
	PublishTimeout time.Duration
	// StaleAfter is when a row left publishing by a dead worker is claimed
	// again. Defaults to StaleAfterDefault.
	StaleAfter time.Duration
	// Retry spaces out the retries of a row whose publish failed.
	// Defaults to 1 minute doubling to 1 hour, with 20% jitter.
	Retry backoff.Policy
}

func (c *Config) setDefaults() {
	if c.PollInterval <= 0 {
		c.PollInterval = PollIntervalDefault
	}
	if c.BatchSize <= 0 {
		c.BatchSize = BatchSizeDefault
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = PublishTimeoutDefault
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = StaleAfterDefault
	}
	if c.Retry == (backoff.Policy{}) {
		c.Retry = backoff.Policy{Initial: time.Minute, Max: time.Hour, Multiplier: 2, Jitter: 0.2}
	}
}

// OutboxWorker claims outbox rows and publishes them to their channels.
type OutboxWorker struct {
	cfg     Config
	repo    *outbox.Repository
	redis   *redis.Client
	metrics *telemetry.Metrics
	tracer  trace.Tracer
	logger  *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a worker; call Start to run it.
func New(cfg Config, repo *outbox.Repository, rdb *redis.Client, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) *OutboxWorker {
	cfg.setDefaults()
	return &OutboxWorker{cfg: cfg, repo: repo, redis: rdb, metrics: metrics, tracer: tracer, logger: logger.With("component", "outbox_worker")}
}

// Start launches the drain loop; starting twice does nothing.
func (w *OutboxWorker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return nil
	}
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel, w.done = cancel, make(chan struct{})
	go w.run(loopCtx, w.done)
	w.logger.InfoContext(ctx, "outbox worker started", "batch_size", w.cfg.BatchSize, "poll_interval", w.cfg.PollInterval.String())
	return nil
}

// Stop lets the batch in flight finish, then ends the loop, bounded by ctx.
func (w *OutboxWorker) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop outbox worker: %w", ctx.Err())
	}
}

func (w *OutboxWorker) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		// The batch runs on a context that outlives Stop's cancel, so a batch
		// in flight is published and marked rather than abandoned half way.
		n, err := w.DrainOnce(context.WithoutCancel(ctx))
		wait := w.cfg.PollInterval
		if err != nil {
			w.logger.ErrorContext(ctx, "outbox drain failed", "error", err)
		} else if n >= w.cfg.BatchSize {
			wait = 0
		}
		if ctx.Err() != nil {
			return
		}
		if wait == 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// DrainOnce claims one batch, publishes it and records the outcome of every
// row. It returns the number of rows claimed.
func (w *OutboxWorker) DrainOnce(ctx context.Context) (int, error) {
	entries, err := w.repo.Claim(ctx, w.cfg.BatchSize, w.cfg.StaleAfter)
	if err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return 0, nil
	}
	ctx, span := w.tracer.Start(ctx, "publisher.batch", trace.WithAttributes(attribute.Int("batch_size", len(entries))))
	defer span.End()

	results := w.publish(ctx, entries)
	var published []string
	for i, e := range entries {
		if results[i] == nil {
			published = append(published, e.ID)
		}
	}
	if _, err := w.repo.MarkPublished(ctx, published); err != nil {
		// The messages went out; the rows stay publishing and are claimed
		// again after StaleAfter: a duplicate delivery, never a loss.
		return len(entries), fmt.Errorf("mark %d rows published: %w", len(published), err)
	}
	now := time.Now()
	for i, e := range entries {
		attrs := metric.WithAttributes(attribute.String("channel", e.RoutingKey()))
		if results[i] == nil {
			w.metrics.OutboxPublished.Add(ctx, 1, attrs)
			w.metrics.OutboxPublishLag.Record(ctx, now.Sub(e.CreatedAt).Seconds(), attrs)
			continue
		}
		w.metrics.OutboxFailed.Add(ctx, 1, attrs)
		next := now.Add(w.cfg.Retry.Delay(e.RetryCount))
		w.logger.ErrorContext(ctx, "publish failed", "outbox_id", e.ID, "content_id", e.ContentID, "source", e.SourceName,
			"channel", e.RoutingKey(), "retry_count", e.RetryCount+1, "max_retries", e.MaxRetries, "next_retry_at", next, "error", results[i])
		if err := w.repo.MarkFailed(ctx, e.ID, results[i].Error(), next); err != nil {
			w.logger.ErrorContext(ctx, "recording publish failure", "outbox_id", e.ID, "error", err)
		}
	}
	return len(entries), nil
}

// publish sends every entry through one Redis pipeline and returns one error
// (or nil) per entry.
func (w *OutboxWorker) publish(ctx context.Context, entries []domain.OutboxEntry) []error {
	results := make([]error, len(entries))
	ctx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
	defer cancel()
	now := time.Now()
	pipe := w.redis.Pipeline()
	cmds := make([]*redis.IntCmd, len(entries))
	for i := range entries {
		body, err := json.Marshal(entries[i].ToPublishMessage(now))
		if err != nil {
			results[i] = fmt.Errorf("marshal message: %w", err)
			continue
		}
		cmds[i] = pipe.Publish(ctx, entries[i].RoutingKey(), body)
	}
	_, execErr := pipe.Exec(ctx)
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		receivers, err := cmd.Result()
		switch {
		case err != nil:
			results[i] = fmt.Errorf("redis publish: %w", err)
		case receivers == 0:
			// Published, but nobody was listening: recorded, not an error.
			w.metrics.NoReceivers.Add(ctx, 1, metric.WithAttributes(attribute.String("channel", entries[i].RoutingKey())))
			w.logger.DebugContext(ctx, "published to a channel with no subscribers", "channel", entries[i].RoutingKey(), "content_id", entries[i].ContentID)
		}
	}
	if execErr != nil && !errors.Is(execErr, redis.Nil) {
		for i := range results {
			if results[i] == nil && cmds[i] != nil && cmds[i].Err() != nil {
				results[i] = fmt.Errorf("redis pipeline: %w", execErr)
			}
		}
	}
	return results
}
