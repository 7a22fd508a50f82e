package rulestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/pgnotify"
)

// Watcher defaults.
const (
	// PollIntervalDefault is how often the rule-set version is read when no
	// notification arrives. A change reaches the engine within about this
	// long even when LISTEN is down, well inside the 2 s target.
	PollIntervalDefault = time.Second
	// QueryTimeoutDefault bounds one version read or one rule load.
	QueryTimeoutDefault = 5 * time.Second
	// ListenerMinReconnectDefault and ListenerMaxReconnectDefault bound the
	// LISTEN connection's reconnect backoff.
	ListenerMinReconnectDefault = 100 * time.Millisecond
	ListenerMaxReconnectDefault = 5 * time.Second
	// ListenWaitDefault is how long Start waits for LISTEN to be in place.
	ListenWaitDefault = 2 * time.Second
)

// Reload results, the values of the result label of
// classifier_rules_reload_total.
const (
	ReloadSuccess = "success"
	// ReloadDBError: the rules could not be read; retried at the next poll.
	ReloadDBError = "db_error"
	// ReloadRejected: the engine refused the rule set (a rule edited by hand
	// into something invalid); the engine keeps its rules and this version
	// is not retried until the rules change again.
	ReloadRejected = "rejected"
	// ReloadOverBudget: the stored set is over the cost budget
	// (CheckSetBudget), for example written with psql. The engine keeps its
	// last good rules (at start, when there are none, the largest part of
	// the set within budget: FitBudget), /ready reports it, and this
	// version is not retried until the rules change again.
	ReloadOverBudget = "over_budget"
)

// Updater receives each new rule set: *rules.Engine and *rules.Shadow are
// Updaters. Update must keep the previous rules when it fails.
type Updater interface {
	Update(rules []rules.Rule) error
}

// Loader reads the rule set; *Repository is a Loader.
type Loader interface {
	Version(ctx context.Context) (int64, error)
	LoadEnabled(ctx context.Context) ([]rules.Rule, int64, error)
}

// WatcherConfig configures a Watcher.
type WatcherConfig struct {
	// DatabaseURL is the classifier database's connection string, for the
	// dedicated LISTEN connection. Required.
	DatabaseURL string
	// PollInterval is the fallback version check. Defaults to
	// PollIntervalDefault.
	PollInterval time.Duration
	// QueryTimeout bounds each database call. Defaults to QueryTimeoutDefault.
	QueryTimeout time.Duration
	// ListenerMinReconnect and ListenerMaxReconnect bound the LISTEN
	// connection's reconnect backoff. Default to ListenerMinReconnectDefault
	// and ListenerMaxReconnectDefault.
	ListenerMinReconnect time.Duration
	ListenerMaxReconnect time.Duration
	// ListenWait is how long Start waits for LISTEN before going on with
	// polling alone (LISTEN keeps trying). Defaults to ListenWaitDefault.
	ListenWait time.Duration
	// Meter records classifier_rules_reload_total,
	// classifier_rules_reload_duration_seconds, classifier_rules_loaded and
	// classifier_rules_version. Defaults to a no-op meter.
	Meter metric.Meter
}

func (c *WatcherConfig) setDefaults() {
	c.PollInterval = config.PositiveOr(c.PollInterval, PollIntervalDefault)
	c.QueryTimeout = config.PositiveOr(c.QueryTimeout, QueryTimeoutDefault)
	c.ListenerMinReconnect = config.PositiveOr(c.ListenerMinReconnect, ListenerMinReconnectDefault)
	c.ListenerMaxReconnect = config.PositiveOr(c.ListenerMaxReconnect, ListenerMaxReconnectDefault)
	if c.ListenerMaxReconnect < c.ListenerMinReconnect {
		c.ListenerMaxReconnect = c.ListenerMinReconnect
	}
	c.ListenWait = config.PositiveOr(c.ListenWait, ListenWaitDefault)
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("rulestore")
	}
}

// Watcher keeps an engine's rules equal to the enabled rules in the
// database. It LISTENs on NotifyChannel for changes (through a
// pgnotify.Notifier, which reconnects on its own and coalesces a burst of
// notifications into one wake-up) and also reads the
// rule-set version every PollInterval, so a change made through any replica
// (or psql) reaches this replica's engine within about a second even when a
// notification is lost. A reload that fails leaves the engine's rules as they
// were; it is logged and counted.
//
// Watcher is a lifecycle component with the contract of lifecycle.Base:
// Start loads the rules once (and fails if it cannot, so that no document is
// classified with no rules), then watches in the background until Stop.
type Watcher struct {
	cfg     WatcherConfig
	loader  Loader
	target  Updater
	logger  *slog.Logger
	metrics watcherMetrics

	loadedVersion atomic.Int64
	loadedRules   atomic.Int64

	base     lifecycle.Base
	notifier *pgnotify.Notifier
	// rejectedVersion is the last version the engine refused; the loop
	// does not retry it until the version changes.
	rejectedVersion atomic.Int64
	// reloadMu serializes reloads (Start's, the loop's and Reload's).
	reloadMu sync.Mutex
	// budgetProblem is why the stored set was refused or trimmed for being
	// over budget; empty while the loaded set is the stored one.
	budgetProblem atomic.Pointer[string]
}

type watcherMetrics struct {
	reloads  metric.Int64Counter
	duration metric.Float64Histogram
	reg      metric.Registration
}

// NewWatcher returns a Watcher that loads rules through loader into target.
func NewWatcher(cfg WatcherConfig, loader Loader, target Updater, logger *slog.Logger) (*Watcher, error) {
	cfg.setDefaults()
	var errs []error
	if cfg.DatabaseURL == "" {
		errs = append(errs, errors.New("DatabaseURL is required"))
	}
	if loader == nil {
		errs = append(errs, errors.New("loader is required"))
	}
	if target == nil {
		errs = append(errs, errors.New("target is required"))
	}
	if logger == nil {
		errs = append(errs, errors.New("logger is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new rules watcher: %w", err)
	}
	w := &Watcher{cfg: cfg, loader: loader, target: target, logger: logger.With(slog.String("component", "rules_watcher"))}
	notifier, err := pgnotify.New(pgnotify.Config{
		URL: cfg.DatabaseURL, Channels: []string{NotifyChannel},
		MinReconnect: cfg.ListenerMinReconnect, MaxReconnect: cfg.ListenerMaxReconnect,
		Name: "rules_listener", Logger: logger,
	})
	if err != nil {
		return nil, fmt.Errorf("new rules watcher: %w", err)
	}
	w.notifier = notifier
	w.loadedVersion.Store(-1)
	if err := w.initMetrics(); err != nil {
		return nil, fmt.Errorf("new rules watcher: metrics: %w", err)
	}
	return w, nil
}

func (w *Watcher) initMetrics() error {
	m := w.cfg.Meter
	var errs []error
	var err error
	w.metrics.reloads, err = m.Int64Counter("classifier_rules_reload_total",
		metric.WithDescription("Rule reloads into the engine, by result (success, db_error, rejected, over_budget)"))
	errs = append(errs, err)
	w.metrics.duration, err = m.Float64Histogram("classifier_rules_reload_duration_seconds",
		metric.WithDescription("Time to read the enabled rules and rebuild the engine"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	errs = append(errs, err)
	loaded, err := m.Int64ObservableGauge("classifier_rules_loaded",
		metric.WithDescription("Enabled rules in the engine after the last successful reload"))
	errs = append(errs, err)
	version, err := m.Int64ObservableGauge("classifier_rules_version",
		metric.WithDescription("Rule-set version in the engine; equal on every replica once reloads converge"))
	errs = append(errs, err)
	overBudget, err := m.Int64ObservableGauge("classifier_rules_over_budget",
		metric.WithDescription("1 while the stored rule set is over the cost budget and the engine runs the last good (or a trimmed) set"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.metrics.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if v := w.loadedVersion.Load(); v >= 0 {
			o.ObserveInt64(loaded, w.loadedRules.Load())
			o.ObserveInt64(version, v)
		}
		var over int64
		if w.budgetProblem.Load() != nil {
			over = 1
		}
		o.ObserveInt64(overBudget, over)
		return nil
	}, loaded, version, overBudget)
	return err
}

// Version is the rule-set version in the engine, or -1 before the first
// successful load.
func (w *Watcher) Version() int64 { return w.loadedVersion.Load() }

// BudgetCheck reports, for /ready (an advisory check), why the stored rule
// set is not the one in the engine when it is over the cost budget, or nil.
func (w *Watcher) BudgetCheck(context.Context) error {
	if p := w.budgetProblem.Load(); p != nil {
		return errors.New(*p)
	}
	return nil
}

// Start loads the rules into the engine, failing if that is impossible, and
// starts watching for changes. It is idempotent; starting a stopped Watcher
// is an error. ctx bounds the first load only.
func (w *Watcher) Start(ctx context.Context) error {
	err := w.base.StartFunc(ctx, func(run context.Context) error {
		if err := w.reload(ctx, "start"); err != nil {
			return err
		}
		if err := w.notifier.Start(ctx); err != nil {
			return err
		}
		// Wait a moment for LISTEN, so a change made right after Start is
		// notified rather than polled; if the connection is slow the loop's
		// polling covers the gap.
		wait := time.NewTimer(w.cfg.ListenWait)
		defer wait.Stop()
		select {
		case <-w.notifier.Listening():
		case <-run.Done():
		case <-wait.C:
			w.logger.WarnContext(ctx, "LISTEN not established yet; polling until it is", slog.Duration("waited", w.cfg.ListenWait))
		}
		w.base.Go(func() { w.loop(run) })
		w.logger.InfoContext(ctx, "rules watcher started", slog.Int64("version", w.Version()),
			slog.Int64("rules", w.loadedRules.Load()), slog.String("channel", NotifyChannel),
			slog.Duration("poll_interval", w.cfg.PollInterval))
		return nil
	})
	if err != nil {
		return fmt.Errorf("start rules watcher: %w", err)
	}
	return nil
}

// Stop ends the watching and closes the LISTEN connection. It is idempotent
// and safe before Start; every call waits, bounded by ctx.
func (w *Watcher) Stop(ctx context.Context) error {
	done, stopping := w.base.StopInit()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("stop rules watcher: %w", ctx.Err())
	}
	if nerr := w.notifier.Stop(ctx); nerr != nil {
		err = errors.Join(err, fmt.Errorf("stop rules watcher: %w", nerr))
	}
	if stopping {
		if uerr := w.metrics.reg.Unregister(); uerr != nil {
			err = errors.Join(err, fmt.Errorf("stop rules watcher: unregister metrics: %w", uerr))
		}
	}
	return err
}

func (w *Watcher) loop(ctx context.Context) {
	ticker := time.NewTicker(w.cfg.PollInterval)
	defer ticker.Stop()
	w.check(ctx) // a change between the first load and LISTEN
	for {
		select {
		case <-ctx.Done():
			return
		case wake := <-w.notifier.C():
			// After a reconnect notifications may have been lost: reload.
			// Otherwise the payload is the latest version notified.
			if payload, ok := wake.Payloads[NotifyChannel]; ok && !wake.Reconnected {
				if v, err := strconv.ParseInt(payload, 10, 64); err == nil &&
					(v <= w.loadedVersion.Load() || v == w.rejectedVersion.Load()) {
					continue // already loaded (by a poll, or a coalesced change) or refused
				}
			}
			w.reloadLogged(ctx, "notify")
		case <-ticker.C:
			w.check(ctx)
		}
	}
}

// check reads the version and reloads when it differs from the loaded one.
func (w *Watcher) check(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, w.cfg.QueryTimeout)
	v, err := w.loader.Version(qctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			w.logger.WarnContext(ctx, "read rules version failed", slog.Any("error", err))
		}
		return
	}
	if v == w.loadedVersion.Load() || v == w.rejectedVersion.Load() {
		return
	}
	w.reloadLogged(ctx, "poll")
}

func (w *Watcher) reloadLogged(ctx context.Context, trigger string) {
	if err := w.reload(ctx, trigger); err != nil && ctx.Err() == nil {
		w.logger.ErrorContext(ctx, "rules reload failed; keeping the previous rules",
			slog.String("trigger", trigger), slog.Int64("version", w.Version()), slog.Any("error", err))
	}
}

// Reload reads the enabled rules and hands them to the engine now. The
// Watcher does this on its own; Reload is for callers that cannot wait.
func (w *Watcher) Reload(ctx context.Context) error {
	return w.reload(ctx, "manual")
}

func (w *Watcher) reload(ctx context.Context, trigger string) error {
	w.reloadMu.Lock()
	defer w.reloadMu.Unlock()
	start := time.Now()
	qctx, cancel := context.WithTimeout(ctx, w.cfg.QueryTimeout)
	rs, version, err := w.loader.LoadEnabled(qctx)
	cancel()
	if err != nil {
		w.record(ctx, ReloadDBError, start)
		return fmt.Errorf("load rules: %w", err)
	}
	if trigger != "start" && trigger != "manual" &&
		(version == w.loadedVersion.Load() || version == w.rejectedVersion.Load()) {
		// Another trigger got there first, or the engine already refused
		// this very rule set: wait for the next change.
		return nil
	}
	overBudget := false
	if err := CheckSetBudget(rs); err != nil {
		if w.loadedVersion.Load() >= 0 {
			// Keep the last good set: never build what no replica can afford.
			w.rejectedVersion.Store(version)
			msg := fmt.Sprintf("rules version %d refused, version %d kept: %v", version, w.loadedVersion.Load(), err)
			w.budgetProblem.Store(&msg)
			w.record(ctx, ReloadOverBudget, start)
			return fmt.Errorf("rules version %d: %w", version, err)
		}
		// No last good set yet (a start): load the largest part within
		// budget rather than crash-loop on every replica.
		kept, dropped := FitBudget(rs)
		msg := fmt.Sprintf("rules version %d over budget (%v); started with %d of %d rules, left out rule ids %v",
			version, err, len(kept), len(rs), dropped)
		w.budgetProblem.Store(&msg)
		w.record(ctx, ReloadOverBudget, start)
		w.logger.ErrorContext(ctx, "stored rule set over budget; loading the part within budget",
			slog.Int64("version", version), slog.Int("rules", len(rs)), slog.Int("kept", len(kept)),
			slog.Any("dropped_rule_ids", dropped), slog.Any("error", err))
		rs, overBudget = kept, true
	}
	if err := w.target.Update(rs); err != nil {
		w.rejectedVersion.Store(version)
		w.record(ctx, ReloadRejected, start)
		return fmt.Errorf("engine refused rules version %d: %w", version, err)
	}
	if !overBudget {
		w.budgetProblem.Store(nil)
	}
	previous := w.loadedVersion.Swap(version)
	w.loadedRules.Store(int64(len(rs)))
	if !overBudget {
		w.record(ctx, ReloadSuccess, start)
	}
	w.logger.InfoContext(ctx, "rules reloaded", slog.String("trigger", trigger),
		slog.Int64("version", version), slog.Int64("previous_version", previous),
		slog.Int("rules", len(rs)), slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
	return nil
}

func (w *Watcher) record(ctx context.Context, result string, start time.Time) {
	attrs := metric.WithAttributes(attribute.String("result", result))
	w.metrics.reloads.Add(ctx, 1, attrs)
	w.metrics.duration.Record(ctx, time.Since(start).Seconds(), attrs)
}
