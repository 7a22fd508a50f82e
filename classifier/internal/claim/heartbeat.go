package claim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of HeartbeatConfig.
const (
	LeaseDefault    = 15 * time.Second
	IntervalDefault = 5 * time.Second
)

// HeartbeatConfig configures a Heartbeat.
type HeartbeatConfig struct {
	// ReplicaID is this replica's claimed_by. Required.
	ReplicaID string
	// IndexPattern selects the raw indices (for releasing a previous run's
	// claims at start). Required.
	IndexPattern string
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
	store    *storage.ContentStore
	logger   *slog.Logger
	loop     lifecycle.Loop
}

// NewHeartbeat returns a heartbeat over registry.
func NewHeartbeat(cfg HeartbeatConfig, registry *Registry, store *storage.ContentStore, logger *slog.Logger) (*Heartbeat, error) {
	if cfg.ReplicaID == "" || cfg.IndexPattern == "" {
		return nil, errors.New("new heartbeat: ReplicaID and IndexPattern are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = IntervalDefault
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = max(cfg.Interval, 5*time.Second)
	}
	h := &Heartbeat{cfg: cfg, registry: registry, store: store, logger: logger.With("component", "claim_heartbeat")}
	h.loop = lifecycle.Loop{Name: "claim heartbeat", Logger: h.logger, Step: func(ctx context.Context) time.Duration {
		h.Renew(ctx)
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
	n, err := h.releaseLeftovers(rctx)
	cancel()
	switch {
	case err != nil:
		h.logger.WarnContext(ctx, "could not release the claims of a previous run; they return after the lease", "error", err)
	case n > 0:
		h.logger.InfoContext(ctx, "released the claims of a previous run", "documents", n, "replica", h.cfg.ReplicaID)
	}
	return h.loop.Start(ctx)
}

// Stop ends the renewals and returns the claims still tracked to pending.
func (h *Heartbeat) Stop(ctx context.Context) error {
	err := h.loop.Stop(ctx)
	var released int
	h.registry.withLocked(func(docs []*domain.RawContent) []*domain.RawContent {
		if len(docs) == 0 {
			return nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.Timeout)
		defer cancel()
		results, rerr := h.store.Release(rctx, docs)
		if rerr != nil {
			h.logger.WarnContext(ctx, "could not release claims at stop; they return after the lease", "documents", len(docs), "error", rerr)
			return nil
		}
		for _, r := range results {
			if r.Err == nil {
				released++
			}
		}
		return docs
	})
	if released > 0 {
		h.logger.InfoContext(ctx, "released unfinished claims at stop", "documents", released)
	}
	return err
}

// renewChunk bounds the claims renewed in one request, each under its own
// Timeout: one request for thousands of claims on a busy cluster outlived
// its timeout, and its answer was lost.
const renewChunk = 500

// Renew renews the tracked claims that are due: those last claimed or
// renewed at least half an Interval ago. Beats are at most an Interval
// apart, so a claim is renewed within one and a half Intervals of its last
// renewal, inside the lease (at least two Intervals); a claim finished
// sooner, the common case, costs no renewal at all. A renewal refused with
// 409 is checked: a document that still carries this replica's claimed_by,
// in status processing, with a claimed_at not before the one known, is
// still this replica's (a renewal whose answer was lost went through) and
// its version is adopted; otherwise another replica took the document over
// (or it is gone) and it is dropped from the registry, never committed
// here. The registry stays open meanwhile: only a Take of a claim being
// renewed waits, and only for its own chunk.
func (h *Heartbeat) Renew(ctx context.Context) {
	now := time.Now().UTC()
	rn := h.registry.begin(now.Add(-h.cfg.Interval / 2))
	for i := 0; i < len(rn.docs); i += renewChunk {
		h.renew(ctx, rn.slice(i, min(i+renewChunk, len(rn.docs))), now)
	}
}

// renew renews one chunk of claims at now and ends its renewal.
func (h *Heartbeat) renew(ctx context.Context, rn renewal, now time.Time) {
	rctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	results, err := h.store.Renew(rctx, rn.docs, now)
	if err != nil {
		if ctx.Err() == nil {
			h.logger.WarnContext(ctx, "claim renewal failed; retrying at the next beat", "documents", len(rn.docs), "error", err)
		}
		// Whether it went through is unknown: the next beat's renewal is
		// refused if it did, and the claim is then recognized as ours.
		h.registry.end(rn, nil, nil)
		return
	}
	held := make(map[*domain.RawContent]time.Time, len(rn.docs))
	var refused renewal
	for i, r := range results {
		switch {
		case r.Err == nil:
			held[rn.docs[i]] = now
		case esclient.IsConflict(r.Err) || r.Status == 404:
			refused.docs = append(refused.docs, rn.docs[i])
			refused.held = append(refused.held, rn.held[i])
		}
		// Any other refusal (429, 5xx) left the claim as it was: the next
		// beat renews it.
	}
	drop := h.lost(rctx, refused, held)
	h.registry.end(rn, held, drop)
}

// lost sorts the refused claims: one still carrying this replica's claim
// (ownClaim) has its current version adopted and is added to held; the
// others are lost and returned.
func (h *Heartbeat) lost(ctx context.Context, refused renewal, held map[*domain.RawContent]time.Time) (drop []*domain.RawContent) {
	if len(refused.docs) == 0 {
		return nil
	}
	refs := make([]domain.DocKey, len(refused.docs))
	for i, d := range refused.docs {
		refs[i] = domain.DocKey{Index: d.Index, ID: d.ID}
	}
	current, _, err := h.store.GetRaw(ctx, refs)
	if err != nil {
		return nil // unknown: keep them, the next beat looks again
	}
	byKey := make(map[domain.DocKey]*domain.RawContent, len(current))
	for _, c := range current {
		byKey[domain.DocKey{Index: c.Index, ID: c.ID}] = c
	}
	for i, d := range refused.docs {
		c := byKey[refs[i]]
		if c != nil && ownClaim(c, h.cfg.ReplicaID, refused.held[i]) {
			d.SeqNo, d.PrimaryTerm, d.Source = c.SeqNo, c.PrimaryTerm, c.Source
			held[d] = *c.ClaimedAt
			continue
		}
		h.logger.WarnContext(ctx, "claim lost to another replica; this replica will not commit it",
			"content_id", d.ID, "index", d.Index)
		drop = append(drop, d)
	}
	return drop
}

// ownClaim reports whether cur still carries this replica's claim, known to
// hold claimed_at held: claimed_by is written by this replica only, and a
// renewal only moves claimed_at forward.
func ownClaim(cur *domain.RawContent, replica string, held time.Time) bool {
	return cur.ClassificationStatus == contentindex.StatusProcessing && cur.ClaimedBy == replica &&
		cur.ClaimedAt != nil && !cur.ClaimedAt.Before(held)
}

func (h *Heartbeat) releaseLeftovers(ctx context.Context) (int, error) {
	total := 0
	for range 100 { // at most 100,000 documents; the lease covers the rest
		docs, err := h.store.ClaimedBy(ctx, h.cfg.IndexPattern, h.cfg.ReplicaID, 1000)
		if err != nil {
			return total, err
		}
		if len(docs) == 0 {
			return total, nil
		}
		results, err := h.store.Release(ctx, docs)
		if err != nil {
			return total, err
		}
		won := 0
		for _, r := range results {
			if r.Err == nil {
				won++
			}
		}
		total += won
		if won == 0 {
			return total, nil
		}
	}
	return total, fmt.Errorf("release leftovers: more than 100,000 claims")
}
