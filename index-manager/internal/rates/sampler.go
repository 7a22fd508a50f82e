package rates

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Sampler defaults.
const (
	// IntervalDefault is how often counters are sampled.
	IntervalDefault = 30 * time.Second
	// RetentionDefault is how long samples are kept; it must exceed the
	// rate window.
	RetentionDefault = time.Hour
)

// CounterSource reads the counters of every content index.
type CounterSource interface {
	ContentCounters(ctx context.Context) ([]indices.Counters, error)
}

// SamplerConfig configures a Sampler.
type SamplerConfig struct {
	// Interval between samples. Defaults to IntervalDefault.
	Interval time.Duration
	// Retention is how long samples are kept. Defaults to RetentionDefault.
	Retention time.Duration
	// Meter records index_manager_stats_samples_total. Defaults to a no-op.
	Meter metric.Meter
	// Logger is required.
	Logger *slog.Logger
}

func (c *SamplerConfig) setDefaults() {
	c.Interval = cmp.Or(c.Interval, IntervalDefault)
	c.Retention = cmp.Or(c.Retention, RetentionDefault)
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("")
	}
}

func (c *SamplerConfig) validate() error {
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("Interval must be positive (got %s)", c.Interval))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("Retention must be positive (got %s)", c.Retention))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("Logger is required"))
	}
	return errors.Join(errs...)
}

// Sampler stores the counters of every content index every Interval and
// prunes samples older than Retention. It is a lifecycle component: Start
// runs one sample at once and then the loop in its own goroutine; Stop ends
// it. Both are idempotent and Stop is safe before Start.
type Sampler struct {
	cfg     SamplerConfig
	source  CounterSource
	repo    *Repository
	logger  *slog.Logger
	samples metric.Int64Counter

	base lifecycle.Base
}

// NewSampler returns a Sampler reading from source into repo.
func NewSampler(source CounterSource, repo *Repository, cfg SamplerConfig) (*Sampler, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new sampler: %w", err)
	}
	if source == nil || repo == nil {
		return nil, errors.New("new sampler: source and repository are required")
	}
	samples, err := cfg.Meter.Int64Counter("index_manager_stats_samples",
		metric.WithDescription("Index stats sampling rounds, by result (ok, error)."))
	if err != nil {
		return nil, fmt.Errorf("new sampler: %w", err)
	}
	return &Sampler{cfg: cfg, source: source, repo: repo, samples: samples,
		logger: cfg.Logger.With(slog.String("component", "stats_sampler"))}, nil
}

// Start begins sampling. ctx only bounds Start; Stop ends the loop.
func (s *Sampler) Start(ctx context.Context) error {
	err := s.base.StartFunc(ctx, func(run context.Context) error {
		s.base.Go(func() { s.loop(run) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("start sampler: %w", err)
	}
	return nil
}

// Stop ends the loop, waiting for a sample in progress within ctx. No lock
// is held while it waits.
func (s *Sampler) Stop(ctx context.Context) error {
	if err := s.base.Stop(ctx); err != nil {
		return fmt.Errorf("stop sampler: %w", err)
	}
	return nil
}

func (s *Sampler) loop(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if err := s.SampleOnce(ctx); err != nil && ctx.Err() == nil {
			s.logger.WarnContext(ctx, "sampling index stats failed", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SampleOnce stores one reading of every content index's counters and
// prunes old samples.
func (s *Sampler) SampleOnce(ctx context.Context) error {
	err := s.sample(ctx)
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.samples.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attribute.String("result", result)))
	return err
}

func (s *Sampler) sample(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(s.cfg.Interval, 10*time.Second))
	defer cancel()
	cs, err := s.source.ContentCounters(ctx)
	if err != nil {
		return fmt.Errorf("sample index stats: %w", err)
	}
	now := time.Now()
	if err := s.repo.Insert(ctx, now, cs); err != nil {
		return fmt.Errorf("sample index stats: %w", err)
	}
	if _, err := s.repo.Prune(ctx, now.Add(-s.cfg.Retention)); err != nil {
		return fmt.Errorf("sample index stats: %w", err)
	}
	s.logger.DebugContext(ctx, "sampled index stats", slog.Int("indices", len(cs)))
	return nil
}
