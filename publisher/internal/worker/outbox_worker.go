// Package worker drains the outbox into Redis pub/sub, and owns the loops
// that keep the outbox healthy (rescuing rows of dead workers, deleting old
// published rows).
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/fault"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/pgnotify"
	tracecontext "github.com/north-cloud/infrastructure/telemetry"
	"github.com/north-cloud/publisher/internal/domain"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/sink"
	"github.com/north-cloud/publisher/internal/telemetry"
)

// Defaults of Config.
const (
	PollIntervalDefault       = 5 * time.Second
	BatchSizeDefault          = 1000
	ClaimLoopsDefault         = 2
	PublishTimeoutDefault     = 10 * time.Second
	NotifyDebounceDefault     = 0
	RetryInitialDefault       = time.Minute
	RetryMaxDefault           = time.Hour
	BreakerThresholdDefault   = breaker.ThresholdDefault
	BreakerCooldownDefault    = breaker.CooldownDefault
	BreakerMaxCooldownDefault = breaker.MaxCooldownDefault
)

// releaseTimeout is how long a stopping worker keeps to return its claimed
// but unpublished rows to pending.
const releaseTimeout = 2 * time.Second

// Config configures an OutboxWorker.
type Config struct {
	// PollInterval is the fallback wait between claims when no NOTIFY
	// arrives, less up to a fifth at random (lifecycle.Jitter) so replicas
	// do not poll together. Defaults to PollIntervalDefault.
	PollInterval time.Duration
	// BatchSize is the most rows claimed at once. Each claim loop claims
	// BatchSize rows first, then twice what its last claim found, from
	// BatchSizeStart up to BatchSize: a lone row goes out at once, a backlog
	// in batches of BatchSize. Defaults to BatchSizeDefault.
	BatchSize int
	// ClaimLoops is the number of loops that claim and publish batches
	// side by side. Each holds at most one batch, claimed only once its
	// previous batch is published, so the worker holds at most ClaimLoops
	// batches. With two, a row inserted while one loop waits on its claim
	// or its publish is claimed by the other at once, and the database
	// works on two claims at a time. Defaults to ClaimLoopsDefault.
	ClaimLoops int
	// PublishTimeout bounds one pipelined publish of a batch.
	// Defaults to PublishTimeoutDefault.
	PublishTimeout time.Duration
	// ListenURL is the Postgres connection string used to LISTEN for
	// inserts. Empty disables LISTEN/NOTIFY: the worker only polls.
	ListenURL string
	// NotifyDebounce is how long the worker waits after a notification
	// before claiming (the notifier gathers the notifications of that
	// time into one wake-up). Zero (the default) claims at once: the inserts that
	// arrive while a batch is claimed and published make up the next batch
	// anyway, so a burst still becomes few batches, and a debounce only
	// adds its length to every message's lag.
	NotifyDebounce time.Duration
	// Retry spaces out the retries of a row whose publish failed.
	// Defaults to RetryInitialDefault doubling to RetryMaxDefault, 20% jitter.
	Retry backoff.Policy
	// BreakerThreshold is the number of consecutive Redis failures (of
	// Redis itself, not of one message) that open the Redis circuit
	// breaker. Defaults to BreakerThresholdDefault.
	BreakerThreshold int
	// BreakerCooldown is the wait before the first probe of an open Redis
	// breaker; it doubles after each failed probe. Defaults to
	// BreakerCooldownDefault.
	BreakerCooldown time.Duration
	// BreakerMaxCooldown caps the wait between probes of either breaker.
	// Defaults to BreakerMaxCooldownDefault.
	BreakerMaxCooldown time.Duration
	// PostgresBreakerThreshold is the number of consecutive claims or
	// outcome writes failing because the database is unusable (connection
	// refused or lost, shutting down, credentials refused...) that open the
	// Postgres circuit breaker. Defaults to BreakerThresholdDefault.
	PostgresBreakerThreshold int
	// PostgresBreakerCooldown is the wait before the first probe of an open
	// Postgres breaker. Defaults to BreakerCooldownDefault.
	PostgresBreakerCooldown time.Duration
	// BreakerProbeInterval is how often the breaker monitor looks at the
	// breakers (an open one is probed once its cooldown has passed).
	// Defaults to breaker.MonitorIntervalDefault.
	BreakerProbeInterval time.Duration
}

// setDefaults is one line a field, the shape of every setDefaults (the
// index-manager's LoginLimits looks the same): the fields are the worker's.
func (c *Config) setDefaults() {
	c.PollInterval = config.PositiveOr(c.PollInterval, PollIntervalDefault)
	c.BatchSize = config.PositiveOr(c.BatchSize, BatchSizeDefault)
	c.ClaimLoops = config.PositiveOr(c.ClaimLoops, ClaimLoopsDefault)
	c.PublishTimeout = config.PositiveOr(c.PublishTimeout, PublishTimeoutDefault)
	if c.NotifyDebounce < 0 {
		c.NotifyDebounce = NotifyDebounceDefault
	}
	if c.Retry == (backoff.Policy{}) {
		c.Retry = backoff.Policy{Initial: RetryInitialDefault, Max: RetryMaxDefault, Multiplier: 2, Jitter: 0.2}
	}
	// The breaker settings are defaulted where they are used: breaker.New
	// and breaker.NewMonitor apply the same defaults to a zero value.
}

// OutboxWorker claims outbox rows and publishes them to their channels.
// Several workers, in one process or many, share the outbox safely: a row
// is claimed by one of them at a time (FOR UPDATE SKIP LOCKED).
//
// The messages go out through a sink.Sink (Redis pub/sub, optionally
// mirrored to streams); the worker knows the queue, the sink knows Redis.
//
// It guards its two dependencies with circuit breakers (infrastructure/
// breaker): Redis, opened by failures the sink reports as the sink itself
// being unavailable, and Postgres, opened by claims and outcome writes that
// fail because the database is unusable. While either is not closed the
// worker claims nothing, so an outage spends no retry; its breaker monitor
// probes an open breaker (the sink's Ping, a database ping) and claiming
// resumes as soon as a probe succeeds.
type OutboxWorker struct {
	cfg     Config
	repo    *outbox.Repository
	sink    sink.Sink
	metrics *telemetry.Metrics
	tracer  trace.Tracer
	logger  *slog.Logger

	redisBreaker    *breaker.Breaker
	postgresBreaker *breaker.Breaker
	monitor         *breaker.Monitor
	// wake is poked by a breaker closing; it holds a wake-up for each
	// claim loop.
	wake chan struct{}

	// notifier wakes the claim loops on inserts; nil when
	// Config.ListenURL is empty.
	notifier *pgnotify.Notifier
	// base holds the start/stop state; its run context is the fetch
	// context: Stop cancels it first, so no new batch is claimed.
	base lifecycle.Base
	// workCtx carries the batches in flight; Stop cancels it only when its
	// deadline is near.
	workCtx    context.Context
	workCancel context.CancelFunc
}

// Dependency names: the breakers' names and the dependency label of
// publisher_breaker_state.
const (
	DependencyRedis    = "redis"
	DependencyPostgres = "postgres"
)

// New returns a worker; call Start to run it.
func New(cfg Config, repo *outbox.Repository, snk sink.Sink, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) (*OutboxWorker, error) {
	cfg.setDefaults()
	if repo == nil || snk == nil || metrics == nil || tracer == nil || logger == nil {
		return nil, errors.New("new outbox worker: repo, sink, metrics, tracer and logger are required")
	}
	w := &OutboxWorker{cfg: cfg, repo: repo, sink: snk, metrics: metrics, tracer: tracer,
		logger: logger.With("component", "outbox_worker"), wake: make(chan struct{}, cfg.ClaimLoops)}
	w.workCtx, w.workCancel = context.WithCancel(context.Background())
	if cfg.ListenURL != "" {
		n, err := pgnotify.New(pgnotify.Config{URL: cfg.ListenURL, Channels: []string{outbox.NotifyChannel},
			Debounce: cfg.NotifyDebounce, Name: "outbox_notifier", Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("new outbox worker: %w", err)
		}
		w.notifier = n
	}
	w.redisBreaker = breaker.MustNew(breaker.Config{Name: DependencyRedis, Threshold: cfg.BreakerThreshold,
		Cooldown: cfg.BreakerCooldown, MaxCooldown: cfg.BreakerMaxCooldown, OnChange: w.breakerChanged})
	w.postgresBreaker = breaker.MustNew(breaker.Config{Name: DependencyPostgres, Threshold: cfg.PostgresBreakerThreshold,
		Cooldown: cfg.PostgresBreakerCooldown, MaxCooldown: cfg.BreakerMaxCooldown, OnChange: w.breakerChanged})
	w.monitor = breaker.NewMonitor(cfg.BreakerProbeInterval, cfg.PublishTimeout, w.logger,
		breaker.Guarded{Breaker: w.redisBreaker, Ping: snk.Ping},
		breaker.Guarded{Breaker: w.postgresBreaker, Ping: repo.Ping})
	ctx := context.Background()
	metrics.BreakerState.Record(ctx, int64(breaker.Closed))
	for _, b := range w.Breakers() {
		metrics.DependencyBreakerState.Record(ctx, int64(breaker.Closed), metric.WithAttributes(attribute.String("dependency", b.Name())))
	}
	return w, nil
}

// RedisBreaker returns the worker's Redis circuit breaker.
func (w *OutboxWorker) RedisBreaker() *breaker.Breaker { return w.redisBreaker }

// PostgresBreaker returns the worker's circuit breaker of the outbox
// database.
func (w *OutboxWorker) PostgresBreaker() *breaker.Breaker { return w.postgresBreaker }

// Breakers returns both breakers, Redis first; /ready reports each.
func (w *OutboxWorker) Breakers() []*breaker.Breaker {
	return []*breaker.Breaker{w.redisBreaker, w.postgresBreaker}
}

// breakerChanged records the state gauges and logs each transition with one
// line: opening at error level, closing at info, and the probes of an open
// breaker (open to half-open and back) at debug level, so an outage is one
// error line followed by one line when the dependency is back. Closing wakes
// the claim loops. It runs under the breaker's lock: nothing here may call
// the breaker.
func (w *OutboxWorker) breakerChanged(name string, from, to breaker.State, cause error) {
	ctx := context.Background()
	w.metrics.DependencyBreakerState.Record(ctx, int64(to), metric.WithAttributes(attribute.String("dependency", name)))
	if name == DependencyRedis {
		w.metrics.BreakerState.Record(ctx, int64(to))
	}
	switch {
	case to == breaker.Open && from == breaker.Closed:
		w.logger.ErrorContext(ctx, name+" unusable: circuit breaker open, claiming paused; rows stay pending",
			"dependency", name, "breaker_state", to.String(), "error", cause)
	case to == breaker.Closed:
		w.logger.InfoContext(ctx, name+" usable again: circuit breaker closed, claiming resumed",
			"dependency", name, "breaker_state", to.String())
		w.poke()
	default:
		w.logger.DebugContext(ctx, "circuit breaker state change", "dependency", name,
			"from", from.String(), "to", to.String(), "error", cause)
	}
}

// poke wakes every claim loop; a wake-up already pending absorbs its share.
func (w *OutboxWorker) poke() {
	for range w.cfg.ClaimLoops {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// Start launches the claim loops (and the LISTEN connection when
// Config.ListenURL is set). Starting twice does nothing; a stopped worker
// does not start again.
func (w *OutboxWorker) Start(ctx context.Context) error {
	err := w.base.StartFunc(ctx, func(fetchCtx context.Context) error {
		if err := w.monitor.Start(ctx); err != nil {
			return err
		}
		var wakeups <-chan pgnotify.Wakeup
		if w.notifier != nil {
			if err := w.notifier.Start(ctx); err != nil {
				return err
			}
			wakeups = w.notifier.C()
		}
		for range w.cfg.ClaimLoops {
			w.base.Go(func() { w.run(fetchCtx, w.workCtx, wakeups) })
		}
		w.logger.InfoContext(ctx, "outbox worker started", "batch_size", w.cfg.BatchSize, "claim_loops", w.cfg.ClaimLoops,
			"poll_interval", w.cfg.PollInterval.String(), "listen", w.notifier != nil)
		return nil
	})
	if err != nil {
		return fmt.Errorf("start outbox worker: %w", err)
	}
	return nil
}

// Stop stops claiming, lets the batches in flight finish and returns. If ctx
// is about to expire first, they are cancelled shortly before its deadline
// and their claimed but unpublished rows are returned to pending.
// Stop is idempotent and safe before Start; a second Stop waits for the
// first one's drain, bounded by its own ctx.
func (w *OutboxWorker) Stop(ctx context.Context) error {
	done, stopping := w.base.StopInit() // fetching stops
	if !stopping {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("stop outbox worker: %w", ctx.Err())
		}
	}
	defer w.workCancel()
	// The monitor's probe in progress is bounded by PublishTimeout; a
	// deadline that comes first leaves it to finish on its own.
	defer func() { _ = w.monitor.Stop(ctx) }()
	if w.notifier != nil {
		if err := w.notifier.Stop(ctx); err != nil {
			w.logger.WarnContext(ctx, "outbox notifier did not stop in time", "error", err)
		}
	}
	var cancelWork <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		t := time.NewTimer(left - min(releaseTimeout, left/4))
		defer t.Stop()
		cancelWork = t.C
	}
	for {
		select {
		case <-done:
			w.logger.InfoContext(ctx, "outbox worker stopped")
			return nil
		case <-cancelWork:
			w.logger.WarnContext(ctx, "shutdown deadline near: cancelling the batches in flight")
			w.workCancel()
			cancelWork = nil
		case <-ctx.Done():
			return fmt.Errorf("stop outbox worker: %w", ctx.Err())
		}
	}
}

// run is one claim loop: one select over the end of fetching, a wake-up
// (a notification, or a breaker closing) and the jittered fallback poll.
func (w *OutboxWorker) run(fetchCtx, workCtx context.Context, wakeups <-chan pgnotify.Wakeup) {
	timer := time.NewTimer(0) // drain at once on start
	defer timer.Stop()
	limit := w.cfg.BatchSize // a start often finds a backlog
	for {
		select {
		case <-fetchCtx.Done():
			return
		case <-w.wake:
		case <-wakeups:
		case <-timer.C:
		}
		limit = w.drain(fetchCtx, workCtx, wakeups, limit)
		timer.Reset(lifecycle.Jitter(w.cfg.PollInterval))
	}
}

// drain publishes batch after batch while there is more to claim: until a
// claim comes back short with no wake-up pending, a breaker is not closed
// (the monitor probes it; its closing wakes the loop) or fetching stops.
//
// Two things keep a busy outbox moving and a quiet one quick:
//
//   - The claim follows the backlog: the first asks for Config.BatchSize
//     rows (a start often finds a backlog), every later one for twice the
//     rows the previous claim found, between BatchSizeStart and
//     Config.BatchSize. A lone row goes out in a batch of one as soon as it
//     is claimed; a burst after a quiet spell starts in small batches (its
//     first rows go out without waiting for the whole burst to be claimed)
//     that double up to Config.BatchSize.
//   - A batch's published rows are marked by the statement that claims the
//     next batch (outbox.Repository.MarkAndClaim): one round trip per batch
//     while the outbox is busy. The batch is recorded on its own when no
//     claim follows at once, and always before drain returns, so Stop finds
//     every outcome recorded.
func (w *OutboxWorker) drain(fetchCtx, workCtx context.Context, wakeups <-chan pgnotify.Wakeup, limit int) int {
	var prev *sentBatch // published, its outcome not yet recorded
	defer func() {
		if prev != nil {
			if err := w.record(prev); err != nil {
				w.drainFailed(workCtx, err)
			}
		}
	}()
	for fetchCtx.Err() == nil {
		if ok, _ := breaker.AllClosed(w.redisBreaker, w.postgresBreaker); !ok {
			return limit
		}
		sent, err := w.claimAndPublish(workCtx, limit, prev)
		prev = sent
		if err != nil {
			w.drainFailed(workCtx, err)
			return limit
		}
		n := 0
		if sent != nil {
			n = sent.size()
		}
		asked := limit
		limit = nextLimit(n, w.startLimit(), w.cfg.BatchSize)
		if sent == nil || (n < asked && !w.woken(wakeups)) {
			return limit
		}
	}
	return limit
}

// woken takes a wake-up that is already waiting, if any.
func (w *OutboxWorker) woken(wakeups <-chan pgnotify.Wakeup) bool {
	select {
	case <-w.wake:
		return true
	case <-wakeups:
		return true
	default:
		return false
	}
}

func (w *OutboxWorker) drainFailed(ctx context.Context, err error) {
	if fault.PostgresUnavailable(err) || w.postgresBreaker.State() != breaker.Closed {
		w.logger.WarnContext(ctx, "outbox drain failed: database unusable", "error", err,
			"postgres_breaker", w.postgresBreaker.State().String())
	} else {
		w.logger.ErrorContext(ctx, "outbox drain failed", "error", err)
	}
}

// BatchSizeStart is the least claim limit of the running worker (or
// Config.BatchSize if that is smaller): its limit after the outbox ran dry.
const BatchSizeStart = 100

func (w *OutboxWorker) startLimit() int { return min(BatchSizeStart, w.cfg.BatchSize) }

// nextLimit is the claim limit after a claim that found n rows: twice n,
// within [start, most]. A full batch doubles the limit; a short one sets it
// near the backlog it found.
func nextLimit(n, start, most int) int {
	return min(max(2*n, start), most)
}

// dbTimeout bounds the statements that record a batch.
func (w *OutboxWorker) dbTimeout() time.Duration { return max(w.cfg.PublishTimeout, releaseTimeout) }

// claimTimeout bounds a claim, so a database that stopped answering (a
// network black hole) opens the Postgres breaker instead of hanging the
// worker. It is generous: a claim that commits just as the client gives up
// leaves its rows publishing until the rescuer returns them (after
// PUBLISHER_OUTBOX_STALE_AFTER), so a slow but working database must not
// meet it.
func (w *OutboxWorker) claimTimeout() time.Duration { return max(w.dbTimeout(), minClaimTimeout) }

// minClaimTimeout is the least claimTimeout.
const minClaimTimeout = 30 * time.Second

// postgresFailed counts err against the Postgres breaker when it proves the
// database unusable (the shared fault policy): an availability error, or an
// error that does not tell (a statement that did not answer within its own
// deadline) followed by a failed probe of the database. A statement that
// was only slow or refused its data is not an outage.
func (w *OutboxWorker) postgresFailed(ctx context.Context, err error) {
	if fault.PostgresProved(ctx, err, w.repo.Ping) == fault.Dependency {
		w.postgresBreaker.Failure(err)
	}
}

// DrainOnce claims one batch, publishes it and records the outcome of every
// row. It returns the number of rows claimed. It claims at most
// Config.BatchSize rows; the running worker adapts its claims to the
// backlog instead (see drain).
func (w *OutboxWorker) DrainOnce(ctx context.Context) (int, error) {
	sent, err := w.claimAndPublish(ctx, w.cfg.BatchSize, nil)
	if err != nil || sent == nil {
		return 0, err
	}
	return sent.size(), w.record(sent)
}

// sentBatch is a claimed batch whose messages went out (or failed), waiting
// for its outcome to be recorded.
type sentBatch struct {
	ctx      context.Context // carries the batch's span
	span     trace.Span
	batch    outbox.Batch
	outcomes []sink.Result
	redisErr error
}

func (s *sentBatch) size() int { return len(s.batch.Entries) }

// published returns the claim token and the ids of the rows that went out.
func (s *sentBatch) published() outbox.Published {
	p := outbox.Published{Token: s.batch.Token}
	for i, e := range s.batch.Entries {
		if s.outcomes[i].Err == nil {
			p.IDs = append(p.IDs, e.ID)
		}
	}
	return p
}

// claimAndPublish claims up to limit rows and publishes them. The claim
// also marks prev's published rows, and the rest of prev's outcome is
// recorded after it; should the claim fail, prev is recorded on its own.
// It returns nil when there was nothing to claim.
func (w *OutboxWorker) claimAndPublish(ctx context.Context, limit int, prev *sentBatch) (*sentBatch, error) {
	var done outbox.Published
	if prev != nil {
		done = prev.published()
	}
	claimCtx, cancel := context.WithTimeout(ctx, w.claimTimeout())
	marked, batch, err := w.repo.MarkAndClaim(claimCtx, done, limit)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			w.postgresFailed(ctx, err)
		}
		if prev != nil {
			// Neither the mark nor the claim happened (a statement that
			// committed as the client gave up leaves prev's rows published:
			// they then count as lost to a rescue, the only miscount).
			if rerr := w.record(prev); rerr != nil {
				w.drainFailed(ctx, rerr)
			}
		}
		return nil, err
	}
	w.postgresBreaker.Success()
	if prev != nil {
		if err := w.finish(prev, marked, nil); err != nil {
			w.drainFailed(ctx, err)
		}
	}
	entries := batch.Entries
	if len(entries) == 0 {
		return nil, nil
	}
	ctx, span := w.tracer.Start(ctx, "publisher.batch", trace.WithAttributes(attribute.Int("batch_size", len(entries))))
	w.metrics.BatchSize.Record(ctx, int64(len(entries)))

	s := &sentBatch{ctx: ctx, span: span, batch: batch, outcomes: w.publish(ctx, entries)}
	for _, o := range s.outcomes {
		if o.Err != nil && o.Unavailable {
			s.redisErr = o.Err
		}
	}
	switch {
	case s.redisErr != nil && ctx.Err() == nil:
		w.redisBreaker.Failure(s.redisErr)
	case s.redisErr == nil:
		w.redisBreaker.Success()
	}
	return s, nil
}

// record writes the whole outcome of a sent batch on its own: published
// rows marked in one statement, then the rest (see finish).
func (w *OutboxWorker) record(s *sentBatch) error {
	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), w.dbTimeout())
	defer cancel()
	p := s.published()
	n, err := w.repo.MarkPublished(dbCtx, p.Token, p.IDs)
	return w.finish(s, n, err)
}

// finish records the outcome of a sent batch whose published rows were
// marked (marked of them) or failed to be (markErr): failed rows charged a
// retry, rows Redis could not take released, rows rescued meanwhile
// counted. It ends the batch's span.
func (w *OutboxWorker) finish(s *sentBatch, marked int64, markErr error) error {
	ctx, span, batch, outcomes, redisErr := s.ctx, s.span, s.batch, s.outcomes, s.redisErr
	defer span.End()
	entries := batch.Entries
	var published int
	var release []string
	var failures []outbox.Failure
	for i, e := range entries {
		switch o := outcomes[i]; {
		case o.Err == nil:
			published++
		case o.Unavailable:
			release = append(release, e.ID)
		default:
			failures = append(failures, outbox.Failure{ID: e.ID, Error: o.Err.Error(), RetryIn: w.cfg.Retry.Delay(e.RetryCount)})
		}
	}

	// The outcome is recorded even when Stop cancelled the batch: the
	// messages that went out must be marked, the rest released. Every
	// statement carries the batch's claim token: rows rescued from this
	// batch in the meantime (it outlived the stale age) are not touched.
	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.dbTimeout())
	defer cancel()
	var errs []error
	var lost int64
	if markErr != nil {
		// The messages went out; the rows stay publishing and are rescued
		// after the stale age: a duplicate delivery, never a loss.
		w.postgresFailed(ctx, markErr)
		errs = append(errs, fmt.Errorf("mark %d rows published: %w", published, markErr))
	} else {
		lost += int64(published) - marked
		now := time.Now()
		for i, e := range entries {
			if outcomes[i].Err == nil {
				attrs := metric.WithAttributes(attribute.String("channel", e.RoutingKey()))
				w.metrics.OutboxPublished.Add(ctx, 1, attrs)
				w.metrics.OutboxPublishLag.Record(ctx, now.Sub(e.CreatedAt).Seconds(), attrs)
			}
		}
	}
	if len(failures) > 0 {
		recorded, err := w.recordFailures(dbCtx, batch.Token, entries, outcomes, failures)
		if err != nil {
			w.postgresFailed(ctx, err)
			errs = append(errs, err)
		} else {
			lost += int64(len(failures) - recorded)
		}
	}
	if len(release) > 0 {
		n, err := w.repo.Release(dbCtx, batch.Token, release)
		if err != nil {
			w.postgresFailed(ctx, err)
			errs = append(errs, err)
		} else {
			lost += int64(len(release)) - n
		}
		w.metrics.OutboxReleased.Add(ctx, n)
		w.logger.DebugContext(ctx, "released claimed rows to pending", "rows", n, "error", redisErr)
	}
	if lost > 0 {
		// The batch outlived PUBLISHER_OUTBOX_STALE_AFTER: the rescuer gave
		// these rows back to pending and another claim may hold them now.
		// Theirs is the outcome that counts; a row published here may be
		// published once more (at least once, never lost).
		w.metrics.ClaimLost.Add(ctx, lost)
		w.logger.WarnContext(ctx, "batch outlived the stale age: rows rescued from it were left to their new claim, outcome not recorded",
			"rows_lost", lost, "batch_size", len(entries), "claim_token", batch.Token)
	}
	if err := errors.Join(errs...); err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "recording outcome")
		return err
	}
	return nil
}

// recordFailures marks the failed rows and returns how many it recorded
// (rows rescued from the batch meanwhile are not).
func (w *OutboxWorker) recordFailures(ctx context.Context, token string, entries []domain.OutboxEntry, outcomes []sink.Result, failures []outbox.Failure) (int, error) {
	marked, err := w.repo.MarkFailed(ctx, token, failures)
	if err != nil {
		return 0, err
	}
	isRecorded := make(map[string]bool, len(marked.Recorded))
	for _, id := range marked.Recorded {
		isRecorded[id] = true
	}
	isExhausted := make(map[string]bool, len(marked.Exhausted))
	for _, id := range marked.Exhausted {
		isExhausted[id] = true
	}
	for i, e := range entries {
		o := outcomes[i]
		if o.Err == nil || o.Unavailable || !isRecorded[e.ID] {
			continue
		}
		attrs := metric.WithAttributes(attribute.String("channel", e.RoutingKey()))
		w.metrics.OutboxFailed.Add(ctx, 1, attrs)
		args := []any{"outbox_id", e.ID, "content_id", e.ContentID, "source", e.SourceName, "channel", e.RoutingKey(),
			"retry_count", e.RetryCount + 1, "max_retries", e.MaxRetries, "error", o.Err}
		if isExhausted[e.ID] {
			w.metrics.OutboxExhausted.Add(ctx, 1, attrs)
			w.logger.ErrorContext(ctx, "publish failed, retries exhausted: row stays failed until re-queued", args...)
		} else {
			w.logger.WarnContext(ctx, "publish failed, will retry", append(args, "retry_in", w.cfg.Retry.Delay(e.RetryCount).String())...)
		}
	}
	return len(marked.Recorded), nil
}

// publish encodes every entry and sends the batch through the sink,
// bounded by PublishTimeout, and returns one result per entry: an entry
// that cannot be encoded fails alone. Each message has its span; the
// receivers and the stream mirror's failures are counted per channel.
func (w *OutboxWorker) publish(ctx context.Context, entries []domain.OutboxEntry) []sink.Result {
	out := make([]sink.Result, len(entries))
	ctx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
	defer cancel()
	now := time.Now()
	spans := make([]trace.Span, len(entries))
	msgs := make([]sink.Message, 0, len(entries))
	sent := make([]int, 0, len(entries)) // msgs[j] is entries[sent[j]]
	for i := range entries {
		e := &entries[i]
		channel := e.RoutingKey()
		var msgCtx context.Context
		msgCtx, spans[i] = w.startPublishSpan(ctx, e, channel)
		msg := e.Message(now)
		msg.Traceparent = tracecontext.Traceparent(msgCtx)
		body, err := json.Marshal(msg)
		if err != nil {
			out[i] = sink.Result{Err: fmt.Errorf("marshal message: %w", err)}
			spans[i].RecordError(out[i].Err)
			spans[i].SetStatus(codes.Error, "marshal")
			spans[i].End()
			continue
		}
		msgs = append(msgs, sink.Message{Channel: channel, Body: body})
		sent = append(sent, i)
	}
	for j, r := range w.sink.Publish(ctx, msgs) {
		i := sent[j]
		out[i] = r
		span := spans[i]
		if r.Err != nil {
			span.RecordError(r.Err)
			if ctx.Err() != nil {
				span.SetStatus(codes.Error, "abandoned")
			} else {
				span.SetStatus(codes.Error, "publish")
			}
			span.End()
			continue
		}
		attrs := metric.WithAttributes(attribute.String("channel", msgs[j].Channel))
		if r.MirrorErr != nil {
			span.RecordError(r.MirrorErr)
			w.metrics.StreamMirrorFailures.Add(ctx, 1, attrs)
		}
		span.SetAttributes(attribute.Int64("receivers", r.Receivers))
		span.End()
		w.metrics.Receivers.Add(ctx, r.Receivers, attrs)
		if r.Receivers == 0 {
			// Published, but nobody was listening: recorded, not an error.
			w.metrics.NoReceivers.Add(ctx, 1, attrs)
			w.logger.DebugContext(ctx, "published to a channel with no subscribers", "channel", msgs[j].Channel, "content_id", entries[i].ContentID)
		}
	}
	w.logMirrorFailures(ctx, entries, out)
	return out
}

// startPublishSpan starts the span of one message. A row the classifier
// wrote with a traceparent continues the document's trace (the span is a
// child of the classifier's), linked to the batch that carried it; a row
// without one is a child of the batch. The message carries the returned
// context's traceparent on to its consumers.
func (w *OutboxWorker) startPublishSpan(ctx context.Context, e *domain.OutboxEntry, channel string) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attribute.String("channel", channel), attribute.String("outbox_id", e.ID), attribute.String("source", e.SourceName),
		attribute.String("content_id", e.ContentID))}
	parent := ctx
	if e.Traceparent != "" {
		parent = tracecontext.ContextWithTraceparent(ctx, e.Traceparent)
		opts = append(opts, trace.WithLinks(trace.LinkFromContext(ctx)))
	}
	return w.tracer.Start(parent, "publisher.publish", opts...)
}

// logMirrorFailures logs one warning per batch for the messages whose stream
// mirror failed, with their channels and the first error.
func (w *OutboxWorker) logMirrorFailures(ctx context.Context, entries []domain.OutboxEntry, out []sink.Result) {
	var n int
	var first error
	var channels []string
	for i, o := range out {
		if o.MirrorErr == nil {
			continue
		}
		n++
		if first == nil {
			first = o.MirrorErr
		}
		if ch := entries[i].RoutingKey(); !slices.Contains(channels, ch) {
			channels = append(channels, ch)
		}
	}
	if n > 0 {
		w.logger.WarnContext(ctx, "stream mirror XADD failed: messages published and rows marked published, the channels' streams miss them",
			"messages", n, "channels", strings.Join(channels, ","), "error", first)
	}
}
