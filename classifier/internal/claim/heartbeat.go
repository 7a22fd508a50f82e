package claim

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of HeartbeatConfig.
const (
	IntervalDefault = 5 * time.Second
)

// HeartbeatConfig configures a Heartbeat.
type HeartbeatConfig struct {
	// ReplicaID is this replica's claimed_by. Required.
	ReplicaID string
	// Interval is the time between renewals; keep it well under the claim
	// lease. Defaults to IntervalDefault.
	Interval time.Duration
	// Timeout bounds one renewal or release request. Defaults to the
	// larger of Interval and 5 s.
	Timeout time.Duration
}

// Heartbeat renews the claims in a Registry every Interval, releases the
// claims a previous run of the same replica left behind when it starts, and
// releases the claims still tracked when it stops (the committer, stopped
// before it, will not commit them). It is a lifecycle component.
type Heartbeat struct {
	cfg      HeartbeatConfig
	registry *Registry
	leases   *lease.Store
	logger   *slog.Logger
	loop     lifecycle.Loop
}

// NewHeartbeat returns a heartbeat over registry.
func NewHeartbeat(cfg HeartbeatConfig, registry *Registry, leases *lease.Store, logger *slog.Logger) (*Heartbeat, error) {
	if cfg.ReplicaID == "" || leases == nil {
		return nil, errors.New("new heartbeat: ReplicaID and leases are required")
	}
	cfg.Interval = config.PositiveOr(cfg.Interval, IntervalDefault)
	cfg.Timeout = config.PositiveOr(cfg.Timeout, max(cfg.Interval, 5*time.Second))
	h := &Heartbeat{cfg: cfg, registry: registry, leases: leases, logger: logger.With("component", "claim_heartbeat")}
	h.loop = lifecycle.Loop{Name: "claim heartbeat", Logger: h.logger, Step: func(ctx context.Context) time.Duration {
		h.Renew(ctx)
		h.sweep(ctx)
		return lifecycle.Jitter(cfg.Interval)
	}}
	return h, nil
}

// Start releases this replica's leftover claims (a restart with a stable
// CLASSIFIER_ID after a crash: the documents flow again now rather than
// after the lease), then starts renewing. Failing to release is logged, not
// fatal: the lease returns those documents anyway.
func (h *Heartbeat) Start(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 4*h.cfg.Timeout)
	n, err := h.leases.ReleaseAll(rctx)
	cancel()
	switch {
	case err != nil:
		h.logger.WarnContext(ctx, "could not release the claims of a previous run; they return after the lease", "error", err)
	case n > 0:
		h.logger.InfoContext(ctx, "released the claims of a previous run", "documents", n, "replica", h.cfg.ReplicaID)
	}
	return h.loop.Start(ctx)
}

// Stop ends the renewals and returns the claims still tracked to pending
// (the committer, stopped before it, will not commit them).
func (h *Heartbeat) Stop(ctx context.Context) error {
	err := h.loop.Stop(ctx)
	docs := h.registry.all()
	if len(docs) == 0 {
		return err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.Timeout)
	defer cancel()
	n, rerr := h.leases.Release(rctx, lease.ClaimIDs(docs))
	if rerr != nil {
		h.logger.WarnContext(ctx, "could not release claims at stop; they return after the lease", "documents", len(docs), "error", rerr)
		return err
	}
	h.registry.Take(docs...)
	if n > 0 {
		h.logger.InfoContext(ctx, "released unfinished claims at stop", "documents", n)
	}
	return err
}

// renewChunk bounds the claims renewed in one statement.
const renewChunk = 1000

// Renew renews the tracked claims that are due: those made or last renewed
// at least half an Interval ago. Beats are at most an Interval apart, so a
// claim is renewed within one and a half Intervals of its last renewal,
// inside the lease (at least two Intervals); a claim finished sooner, the
// common case, costs no renewal at all. A renewal is one UPDATE of the
// lease table; a claim it does not find any more was taken over by another
// replica (its lease expired first) and is dropped from the registry, never
// committed here.
func (h *Heartbeat) Renew(ctx context.Context) {
	now := time.Now()
	docs := h.registry.due(now.Add(-h.cfg.Interval / 2))
	for i := 0; i < len(docs); i += renewChunk {
		h.renew(ctx, docs[i:min(i+renewChunk, len(docs))], now)
	}
}

// renew renews one chunk of claims at now.
func (h *Heartbeat) renew(ctx context.Context, docs []*domain.RawContent, now time.Time) {
	rctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	kept, err := h.leases.Renew(rctx, lease.ClaimIDs(docs))
	if err != nil {
		if ctx.Err() == nil {
			h.logger.WarnContext(ctx, "claim renewal failed; retrying at the next beat", "documents", len(docs), "error", err)
		}
		return
	}
	held := make([]*domain.RawContent, 0, len(docs))
	var lost []*domain.RawContent
	for _, d := range docs {
		if kept[d.Lease] {
			held = append(held, d)
			continue
		}
		lost = append(lost, d)
	}
	h.registry.renewed(held, now)
	// A claim not found that the committer has not taken yet was taken
	// over by another replica; one the committer took while this renewal
	// ran was finished.
	for _, d := range h.registry.drop(lost) {
		h.logger.WarnContext(ctx, "claim lost to another replica; this replica will not commit it",
			"content_id", d.ID, "index", d.Index)
	}
}

// sweepLimit bounds the finished claims deleted per beat.
const sweepLimit = 5000

// sweep deletes finished claims whose hold has passed.
func (h *Heartbeat) sweep(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	if _, err := h.leases.Sweep(rctx, sweepLimit); err != nil && ctx.Err() == nil {
		h.logger.WarnContext(ctx, "finished claims not swept; retrying at the next beat", "error", err)
	}
}
