package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/telemetry"
)

// Defaults of CleanerConfig.
const (
	RetentionDefault       = 7 * 24 * time.Hour
	CleanupIntervalDefault = time.Hour
	cleanupChunk           = 5000
)

// CleanerConfig configures an OutboxCleaner.
type CleanerConfig struct {
	// Retention is how long published rows are kept. It is also how long a
	// re-inserted content id is recognised as already published (see
	// README.md). Defaults to RetentionDefault.
	Retention time.Duration
	// Interval is the time between two cleanups.
	// Defaults to CleanupIntervalDefault.
	Interval time.Duration
}

// OutboxCleaner deletes published rows older than the retention. Failed rows
// are never deleted: they wait for an operator. Same shape as OutboxRescuer
// (a config of two durations, a lifecycle.Loop): kept apart because each is
// a component of its own, named in logs, metrics and shutdown.
type OutboxCleaner struct {
	lifecycle.Loop
}

// NewCleaner returns a cleaner; call Start to run it.
func NewCleaner(cfg CleanerConfig, repo *outbox.Repository, metrics *telemetry.Metrics, logger *slog.Logger) *OutboxCleaner {
	cfg.Retention = config.PositiveOr(cfg.Retention, RetentionDefault)
	cfg.Interval = config.PositiveOr(cfg.Interval, CleanupIntervalDefault)
	logger = logger.With("component", "outbox_cleaner")
	c := &OutboxCleaner{}
	c.Loop = lifecycle.Loop{Name: "outbox cleaner", Logger: logger, Step: lifecycle.Every(cfg.Interval, func(ctx context.Context) {
		n, err := repo.CleanupPublished(ctx, cfg.Retention, cleanupChunk)
		if n > 0 {
			metrics.OutboxCleaned.Add(ctx, n)
			logger.InfoContext(ctx, "deleted old published outbox rows", "rows", n, "retention", cfg.Retention.String())
		}
		if err != nil && ctx.Err() == nil {
			logger.ErrorContext(ctx, "outbox cleanup failed", "error", err)
		}
	})}
	return c
}
