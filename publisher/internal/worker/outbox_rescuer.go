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

// Defaults of RescuerConfig.
const (
	StaleAfterDefault      = 5 * time.Minute
	RescueIntervalDefault  = time.Minute
	minRescueIntervalFloor = 100 * time.Millisecond
)

// RescuerConfig configures an OutboxRescuer.
type RescuerConfig struct {
	// StaleAfter is how long a row may stay publishing before it is taken
	// to belong to a dead worker. It must be well above PublishTimeout.
	// Defaults to StaleAfterDefault.
	StaleAfter time.Duration
	// Interval is the time between two rescues. Defaults to StaleAfter/5,
	// at most RescueIntervalDefault.
	Interval time.Duration
}

// OutboxRescuer returns rows left publishing by a worker that died (killed,
// crashed, lost its database connection between claim and outcome) to
// pending, so they are published again: at-least-once delivery, with
// duplicates only from the batch that was in flight.
type OutboxRescuer struct {
	lifecycle.Loop
}

// NewRescuer returns a rescuer; call Start to run it.
func NewRescuer(cfg RescuerConfig, repo *outbox.Repository, metrics *telemetry.Metrics, logger *slog.Logger) *OutboxRescuer {
	cfg.StaleAfter = config.PositiveOr(cfg.StaleAfter, StaleAfterDefault)
	cfg.Interval = config.PositiveOr(cfg.Interval, max(min(cfg.StaleAfter/5, RescueIntervalDefault), minRescueIntervalFloor))
	logger = logger.With("component", "outbox_rescuer")
	r := &OutboxRescuer{}
	r.Loop = lifecycle.Loop{Name: "outbox rescuer", Logger: logger, Step: lifecycle.Every(cfg.Interval, func(ctx context.Context) {
		n, err := repo.ResetToPending(ctx, cfg.StaleAfter)
		if err != nil {
			if ctx.Err() == nil {
				logger.ErrorContext(ctx, "outbox rescue failed", "error", err)
			}
			return
		}
		if n > 0 {
			metrics.OutboxRescued.Add(ctx, n)
			logger.WarnContext(ctx, "returned rows left publishing by a dead worker to pending", "rows", n, "stale_after", cfg.StaleAfter.String())
		}
	})}
	return r
}
