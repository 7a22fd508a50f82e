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
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/publisher/internal/domain"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/telemetry"
)

// Defaults of Config.
const (
	PollIntervalDefault       = 5 * time.Second
	BatchSizeDefault          = 100
	PublishTimeoutDefault     = 10 * time.Second
	NotifyDebounceDefault     = 10 * time.Millisecond
	RetryInitialDefault       = time.Minute
	RetryMaxDefault           = time.Hour
	BreakerThresholdDefault   = 3
	BreakerCooldownDefault    = time.Second
	BreakerMaxCooldownDefault = 30 * time.Second
	StreamMaxLenDefault       = 10000
)

// StreamPrefix prefixes the Redis stream that mirrors a channel when
// Config.StreamMirror is on: channel articles:news is mirrored to the stream
// stream:articles:news.
const StreamPrefix = "stream:"

// releaseTimeout is how long a stopping worker keeps to return its claimed
// but unpublished rows to pending.
const releaseTimeout = 2 * time.Second

// Config configures an OutboxWorker.
type Config struct {
	// PollInterval is the fallback wait between claims when no NOTIFY
	// arrives (jittered by 10%). Defaults to PollIntervalDefault.
	PollInterval time.Duration
	// BatchSize is the most rows claimed at once: one batch is claimed only
	// when the previous one is published and recorded, so the worker never
	// holds more rows than it can publish now. Defaults to BatchSizeDefault.
	BatchSize int
	// PublishTimeout bounds one pipelined publish of a batch.
	// Defaults to PublishTimeoutDefault.
	PublishTimeout time.Duration
	// ListenURL is the Postgres connection string used to LISTEN for
	// inserts. Empty disables LISTEN/NOTIFY: the worker only polls.
	ListenURL string
	// NotifyDebounce is how long the worker waits after a notification
	// before claiming, so a burst of inserts becomes one batch.
	// Defaults to NotifyDebounceDefault.
	NotifyDebounce time.Duration
	// Retry spaces out the retries of a row whose publish failed.
	// Defaults to RetryInitialDefault doubling to RetryMaxDefault, 20% jitter.
	Retry backoff.Policy
	// BreakerThreshold is the number of consecutive Redis failures that
	// open the circuit breaker. Defaults to BreakerThresholdDefault.
	BreakerThreshold int
	// BreakerCooldown is the wait before the first probe of an open breaker;
	// it doubles after each failed probe. Defaults to BreakerCooldownDefault.
	BreakerCooldown time.Duration
	// BreakerMaxCooldown caps the wait between probes.
	// Defaults to BreakerMaxCooldownDefault.
	BreakerMaxCooldown time.Duration
	// StreamMirror also appends every message to a capped Redis stream per
	// channel (StreamPrefix + channel) with XADD, so consumers that were
	// offline can catch up. Defaults to false.
	StreamMirror bool
	// StreamMaxLen caps each mirror stream (approximately).
	// Defaults to StreamMaxLenDefault.
	StreamMaxLen int64
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
	if c.NotifyDebounce <= 0 {
		c.NotifyDebounce = NotifyDebounceDefault
	}
	if c.Retry == (backoff.Policy{}) {
		c.Retry = backoff.Policy{Initial: RetryInitialDefault, Max: RetryMaxDefault, Multiplier: 2, Jitter: 0.2}
	}
	if c.BreakerThreshold <= 0 {
		c.BreakerThreshold = BreakerThresholdDefault
	}
	if c.BreakerCooldown <= 0 {
		c.BreakerCooldown = BreakerCooldownDefault
	}
	if c.BreakerMaxCooldown <= 0 {
		c.BreakerMaxCooldown = BreakerMaxCooldownDefault
	}
	if c.StreamMaxLen <= 0 {
		c.StreamMaxLen = StreamMaxLenDefault
	}
}

// OutboxWorker claims outbox rows and publishes them to their channels.
// Several workers, in one process or many, share the outbox safely: a row
// is claimed by one of them at a time (FOR UPDATE SKIP LOCKED).
type OutboxWorker struct {
	cfg     Config
	repo    *outbox.Repository
	redis   *redis.Client
	metrics *telemetry.Metrics
	tracer  trace.Tracer
	logger  *slog.Logger
	breaker *CircuitBreaker

	mu          sync.Mutex
	started     bool
	stopped     bool
	fetchCancel context.CancelFunc
	workCancel  context.CancelFunc
	done        chan struct{}
	listener    *pq.Listener
}

// New returns a worker; call Start to run it.
func New(cfg Config, repo *outbox.Repository, rdb *redis.Client, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) *OutboxWorker {
	cfg.setDefaults()
	w := &OutboxWorker{cfg: cfg, repo: repo, redis: rdb, metrics: metrics, tracer: tracer, logger: logger.With("component", "outbox_worker")}
	w.breaker = NewCircuitBreaker(cfg.BreakerThreshold, cfg.BreakerCooldown, cfg.BreakerMaxCooldown, w.breakerChanged)
	metrics.BreakerState.Record(context.Background(), int64(BreakerClosed))
	return w
}

// Breaker returns the worker's Redis circuit breaker.
func (w *OutboxWorker) Breaker() *CircuitBreaker { return w.breaker }

// breakerChanged logs each transition once and records the state metric.
// Probes that fail (half-open -> open) are logged at debug level only, so an
// outage is one error line followed by one line when Redis is back.
func (w *OutboxWorker) breakerChanged(from, to BreakerState, cause error) {
	ctx := context.Background()
	w.metrics.BreakerState.Record(ctx, int64(to))
	switch {
	case to == BreakerOpen && from == BreakerClosed:
		w.logger.ErrorContext(ctx, "redis unreachable: circuit breaker open, claiming paused; rows stay pending",
			"breaker_state", to.String(), "error", cause)
	case to == BreakerClosed:
		w.logger.InfoContext(ctx, "redis reachable again: circuit breaker closed, claiming resumed", "breaker_state", to.String())
	default:
		w.logger.DebugContext(ctx, "circuit breaker state change", "from", from.String(), "to", to.String(), "error", cause)
	}
}

// Start launches the drain loop (and the LISTEN connection when
// Config.ListenURL is set). Starting twice does nothing.
func (w *OutboxWorker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return errors.New("start outbox worker: worker was stopped")
	}
	if w.started {
		return nil
	}
	w.started = true
	// Fetching stops first on Stop; the batch in flight keeps its own
	// context so it is published and recorded rather than abandoned.
	fetchCtx, fetchCancel := context.WithCancel(context.WithoutCancel(ctx))
	workCtx, workCancel := context.WithCancel(context.WithoutCancel(ctx))
	w.fetchCancel, w.workCancel, w.done = fetchCancel, workCancel, make(chan struct{})
	wake := make(chan struct{}, 1)
	if w.cfg.ListenURL != "" {
		w.listener = w.listen(fetchCtx, wake)
	}
	go w.run(fetchCtx, workCtx, wake, w.done)
	w.logger.InfoContext(ctx, "outbox worker started", "batch_size", w.cfg.BatchSize, "poll_interval", w.cfg.PollInterval.String(),
		"listen", w.cfg.ListenURL != "", "stream_mirror", w.cfg.StreamMirror)
	return nil
}

// Stop stops claiming, lets the batch in flight finish and returns. If ctx
// is about to expire first, the batch is cancelled shortly before its
// deadline and its claimed but unpublished rows are returned to pending.
// Stop is idempotent and safe before Start.
func (w *OutboxWorker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if !w.started || w.stopped {
		w.stopped = true
		w.mu.Unlock()
		return nil
	}
	w.stopped = true
	w.mu.Unlock()

	w.fetchCancel()
	defer w.workCancel()
	if w.listener != nil {
		_ = w.listener.Close()
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
		case <-w.done:
			w.logger.InfoContext(ctx, "outbox worker stopped")
			return nil
		case <-cancelWork:
			w.logger.WarnContext(ctx, "shutdown deadline near: cancelling the batch in flight")
			w.workCancel()
			cancelWork = nil
		case <-ctx.Done():
			return fmt.Errorf("stop outbox worker: %w", ctx.Err())
		}
	}
}

// listen starts a LISTEN connection that turns notifications into wake-ups.
// pq.Listener reconnects by itself and sends a nil notification after a
// reconnect, which also wakes the worker, since inserts may have been missed.
func (w *OutboxWorker) listen(ctx context.Context, wake chan<- struct{}) *pq.Listener {
	l := pq.NewListener(w.cfg.ListenURL, 100*time.Millisecond, 10*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil {
			w.logger.WarnContext(ctx, "outbox LISTEN connection problem; polling continues", "event", int(ev), "error", err)
		}
	})
	go func() {
		// Listen blocks until connected; Close (from Stop) releases it.
		if err := l.Listen(outbox.NotifyChannel); err != nil && ctx.Err() == nil {
			w.logger.ErrorContext(ctx, "outbox LISTEN failed; relying on polling", "error", err)
		}
	}()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-l.Notify:
				if !ok {
					return
				}
				select {
				case wake <- struct{}{}:
				default: // a wake-up is already pending: coalesced
				}
			}
		}
	}()
	return l
}

func (w *OutboxWorker) run(fetchCtx, workCtx context.Context, wake <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	timer := time.NewTimer(0) // drain at once on start
	defer timer.Stop()
	for {
		select {
		case <-fetchCtx.Done():
			return
		case <-wake:
			if !sleep(fetchCtx, w.cfg.NotifyDebounce) {
				return
			}
		case <-timer.C:
		}
		w.drain(fetchCtx, workCtx)
		timer.Reset(jitter(w.cfg.PollInterval))
	}
}

// drain publishes batch after batch until one comes back short, the breaker
// opens (then it waits for the probe) or fetching stops.
func (w *OutboxWorker) drain(fetchCtx, workCtx context.Context) {
	for fetchCtx.Err() == nil {
		ok, wait := w.breaker.Allow()
		if !ok {
			if !sleep(fetchCtx, wait) {
				return
			}
			continue
		}
		if w.breaker.State() == BreakerHalfOpen {
			pingCtx, cancel := context.WithTimeout(workCtx, w.cfg.PublishTimeout)
			err := w.redis.Ping(pingCtx).Err()
			cancel()
			if err != nil {
				w.breaker.Failure(err)
				continue
			}
			w.breaker.Success()
		}
		n, err := w.DrainOnce(workCtx)
		if err != nil {
			w.logger.ErrorContext(workCtx, "outbox drain failed", "error", err)
			return
		}
		if n < w.cfg.BatchSize {
			return
		}
	}
}

// outcome is the result of publishing one row. transport marks a failure
// of Redis itself (unreachable, timed out, loading, read-only), after which
// the row is released rather than charged a retry.
type outcome struct {
	err       error
	transport bool
}

// DrainOnce claims one batch, publishes it and records the outcome of every
// row. It returns the number of rows claimed.
func (w *OutboxWorker) DrainOnce(ctx context.Context) (int, error) {
	entries, err := w.repo.Claim(ctx, w.cfg.BatchSize)
	if err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return 0, nil
	}
	ctx, span := w.tracer.Start(ctx, "publisher.batch", trace.WithAttributes(attribute.Int("batch_size", len(entries))))
	defer span.End()
	w.metrics.BatchSize.Record(ctx, int64(len(entries)))

	outcomes := w.publish(ctx, entries)
	var published, release []string
	var failures []outbox.Failure
	var redisErr error
	for i, e := range entries {
		switch o := outcomes[i]; {
		case o.err == nil:
			published = append(published, e.ID)
		case o.transport:
			release = append(release, e.ID)
			redisErr = o.err
		default:
			failures = append(failures, outbox.Failure{ID: e.ID, Error: o.err.Error(), RetryIn: w.cfg.Retry.Delay(e.RetryCount)})
		}
	}
	switch {
	case redisErr != nil && ctx.Err() == nil:
		w.breaker.Failure(redisErr)
	case redisErr == nil:
		w.breaker.Success()
	}

	// The outcome is recorded even when Stop cancelled the batch: the
	// messages that went out must be marked, the rest released.
	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(w.cfg.PublishTimeout, releaseTimeout))
	defer cancel()
	var errs []error
	if _, err := w.repo.MarkPublished(dbCtx, published); err != nil {
		// The messages went out; the rows stay publishing and are rescued
		// after the stale age: a duplicate delivery, never a loss.
		errs = append(errs, fmt.Errorf("mark %d rows published: %w", len(published), err))
	} else {
		now := time.Now()
		for i, e := range entries {
			if outcomes[i].err == nil {
				attrs := metric.WithAttributes(attribute.String("channel", e.RoutingKey()))
				w.metrics.OutboxPublished.Add(ctx, 1, attrs)
				w.metrics.OutboxPublishLag.Record(ctx, now.Sub(e.CreatedAt).Seconds(), attrs)
			}
		}
	}
	if len(failures) > 0 {
		errs = append(errs, w.recordFailures(dbCtx, entries, outcomes, failures))
	}
	if len(release) > 0 {
		n, err := w.repo.Release(dbCtx, release)
		if err != nil {
			errs = append(errs, err)
		}
		w.metrics.OutboxReleased.Add(ctx, n)
		w.logger.DebugContext(ctx, "released claimed rows to pending", "rows", n, "error", redisErr)
	}
	if err := errors.Join(errs...); err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "recording outcome")
		return len(entries), err
	}
	return len(entries), nil
}

func (w *OutboxWorker) recordFailures(ctx context.Context, entries []domain.OutboxEntry, outcomes []outcome, failures []outbox.Failure) error {
	exhausted, err := w.repo.MarkFailed(ctx, failures)
	if err != nil {
		return err
	}
	isExhausted := make(map[string]bool, len(exhausted))
	for _, id := range exhausted {
		isExhausted[id] = true
	}
	for i, e := range entries {
		o := outcomes[i]
		if o.err == nil || o.transport {
			continue
		}
		attrs := metric.WithAttributes(attribute.String("channel", e.RoutingKey()))
		w.metrics.OutboxFailed.Add(ctx, 1, attrs)
		args := []any{"outbox_id", e.ID, "content_id", e.ContentID, "source", e.SourceName, "channel", e.RoutingKey(),
			"retry_count", e.RetryCount + 1, "max_retries", e.MaxRetries, "error", o.err}
		if isExhausted[e.ID] {
			w.metrics.OutboxExhausted.Add(ctx, 1, attrs)
			w.logger.ErrorContext(ctx, "publish failed, retries exhausted: row stays failed until re-queued", args...)
		} else {
			w.logger.WarnContext(ctx, "publish failed, will retry", append(args, "retry_in", w.cfg.Retry.Delay(e.RetryCount).String())...)
		}
	}
	return nil
}

// publish sends every entry (and its stream mirror) through one Redis
// pipeline and returns one outcome per entry.
func (w *OutboxWorker) publish(ctx context.Context, entries []domain.OutboxEntry) []outcome {
	out := make([]outcome, len(entries))
	ctx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
	defer cancel()
	now := time.Now()
	pipe := w.redis.Pipeline()
	pubs := make([]*redis.IntCmd, len(entries))
	adds := make([]*redis.StringCmd, len(entries))
	spans := make([]trace.Span, len(entries))
	for i := range entries {
		e := &entries[i]
		channel := e.RoutingKey()
		_, spans[i] = w.tracer.Start(ctx, "publisher.publish", trace.WithAttributes(
			attribute.String("channel", channel), attribute.String("outbox_id", e.ID), attribute.String("source", e.SourceName)))
		body, err := json.Marshal(e.ToPublishMessage(now))
		if err != nil {
			out[i] = outcome{err: fmt.Errorf("marshal message: %w", err)}
			continue
		}
		pubs[i] = pipe.Publish(ctx, channel, body)
		if w.cfg.StreamMirror {
			adds[i] = pipe.XAdd(ctx, &redis.XAddArgs{Stream: StreamPrefix + channel, MaxLen: w.cfg.StreamMaxLen, Approx: true,
				Values: []any{"message", body}})
		}
	}
	// go-redis bounds a round trip by the context's deadline but does not
	// abandon it when the context is cancelled (Stop near its deadline), so
	// the pipeline runs aside and a cancelled batch stops waiting for it. Its
	// rows are then released: should the pipeline still go through, that is
	// a duplicate delivery, never a loss.
	execDone := make(chan struct{})
	go func() {
		defer close(execDone)
		_, _ = pipe.Exec(ctx) // every command carries its own error
	}()
	select {
	case <-execDone:
	case <-ctx.Done():
		for i := range entries {
			if pubs[i] != nil {
				out[i] = outcome{err: fmt.Errorf("redis publish: %w", ctx.Err()), transport: true}
			}
			spans[i].RecordError(ctx.Err())
			spans[i].SetStatus(codes.Error, "abandoned")
			spans[i].End()
		}
		return out
	}
	for i := range entries {
		span := spans[i]
		if pubs[i] == nil {
			span.RecordError(out[i].err)
			span.SetStatus(codes.Error, "marshal")
			span.End()
			continue
		}
		err := pubs[i].Err()
		if err == nil && adds[i] != nil {
			if err = adds[i].Err(); err != nil {
				err = fmt.Errorf("stream mirror: %w", err)
			}
		}
		if err != nil {
			out[i] = outcome{err: fmt.Errorf("redis publish: %w", err), transport: isTransport(err)}
			span.RecordError(err)
			span.SetStatus(codes.Error, "publish")
			span.End()
			continue
		}
		receivers := pubs[i].Val()
		span.SetAttributes(attribute.Int64("receivers", receivers))
		span.End()
		attrs := metric.WithAttributes(attribute.String("channel", entries[i].RoutingKey()))
		w.metrics.Receivers.Add(ctx, receivers, attrs)
		if receivers == 0 {
			// Published, but nobody was listening: recorded, not an error.
			w.metrics.NoReceivers.Add(ctx, 1, attrs)
			w.logger.DebugContext(ctx, "published to a channel with no subscribers", "channel", entries[i].RoutingKey(), "content_id", entries[i].ContentID)
		}
	}
	return out
}

// serverStateErrors are Redis error replies that describe the server, not
// the message: they count against the breaker like a lost connection.
var serverStateErrors = []string{"LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "BUSY", "OOM", "NOREPLICAS"}

// isTransport reports whether err is a failure of Redis itself rather than
// an error reply to one command (such as NOPERM for one channel).
func isTransport(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return true // network error, timeout, closed pool
	}
	msg := reply.Error()
	for _, p := range serverStateErrors {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// sleep waits d or until ctx ends, reporting whether the full wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// jitter spreads d by up to 10% either way, so replicas started together do
// not poll together.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}
