// Package telemetry declares the publisher's metrics. The outbox metrics keep
// the names the original design gave them (classifier_outbox_*, see
// docs/architecture.md), since alerts and dashboards are written against
// them; every other metric is prefixed publisher_.
package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/publisher/internal/domain"
	"github.com/north-cloud/publisher/internal/outbox"
)

// Metrics holds the publisher's instruments.
type Metrics struct {
	// OutboxPublished counts rows published (classifier_outbox_published_total).
	OutboxPublished metric.Int64Counter
	// OutboxPublishLag is insert to publish (classifier_outbox_publish_lag_seconds).
	OutboxPublishLag metric.Float64Histogram
	// OutboxFailed counts publish attempts that failed and used a retry.
	OutboxFailed metric.Int64Counter
	// OutboxExhausted counts rows that used their last retry.
	OutboxExhausted metric.Int64Counter
	// OutboxReleased counts claimed rows returned to pending unpublished
	// (Redis unreachable, or the worker stopping).
	OutboxReleased metric.Int64Counter
	// OutboxRescued counts rows left publishing by a dead worker and reset.
	OutboxRescued metric.Int64Counter
	// OutboxCleaned counts published rows deleted after the retention.
	OutboxCleaned metric.Int64Counter
	// Receivers sums the subscribers each PUBLISH reached.
	Receivers metric.Int64Counter
	// NoReceivers counts messages published to a channel nobody listened on.
	NoReceivers metric.Int64Counter
	// BreakerState is the Redis circuit breaker: 0 closed, 1 half-open, 2 open
	// (publisher_redis_breaker_state, the name alerts and dashboards use).
	BreakerState metric.Int64Gauge
	// DependencyBreakerState is every circuit breaker, by dependency
	// ("redis", "postgres"): 0 closed, 1 half-open, 2 open.
	DependencyBreakerState metric.Int64Gauge
	// StreamMirrorFailures counts messages published whose stream mirror
	// (XADD) failed: the row is published all the same.
	StreamMirrorFailures metric.Int64Counter
	// ClaimLost counts rows whose outcome a batch could not record because
	// the batch outlived PUBLISHER_OUTBOX_STALE_AFTER and the row was rescued
	// (and possibly claimed by another worker) in the meantime.
	ClaimLost metric.Int64Counter
	// BatchSize is the number of rows per claimed batch.
	BatchSize metric.Int64Histogram
	// WorkerEnabled is 1 while this publisher's outbox worker runs, 0 when
	// PUBLISHER_OUTBOX_ENABLED=false switched it off.
	WorkerEnabled metric.Int64Gauge
}

// BacklogFunc reads the outbox's row counts and oldest pending age.
type BacklogFunc func(ctx context.Context) (outbox.Backlog, error)

// New creates the instruments and the backlog gauges, which read the outbox
// table at scrape time (never deltas kept in memory, which drift as soon as
// a second publisher or an operator changes rows).
func New(meter metric.Meter, backlog BacklogFunc) (*Metrics, error) {
	m := &Metrics{}
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	m.OutboxPublished = counter("classifier_outbox_published_total", "Total documents published from outbox")
	m.OutboxFailed = counter("publisher_outbox_failed_total", "Publish attempts that failed and were scheduled for retry")
	m.OutboxExhausted = counter("publisher_outbox_exhausted_total", "Outbox rows that used their last retry and stay failed until re-queued")
	m.OutboxReleased = counter("publisher_outbox_released_total", "Claimed outbox rows returned to pending without publishing (Redis unreachable or worker stopping)")
	m.OutboxRescued = counter("publisher_outbox_rescued_total", "Outbox rows left publishing by a dead worker and returned to pending")
	m.OutboxCleaned = counter("publisher_outbox_cleaned_total", "Published outbox rows deleted after the retention period")
	m.Receivers = counter("publisher_publish_receivers_total", "Subscribers reached, summed over every PUBLISH")
	m.NoReceivers = counter("publisher_publish_no_receivers_total", "Messages published to a channel nobody was subscribed to")
	m.StreamMirrorFailures = counter("publisher_stream_mirror_failures_total", "Messages published whose stream mirror XADD failed (the row is marked published)")
	m.ClaimLost = counter("publisher_outbox_claim_lost_total", "Rows whose outcome a batch could not record because they were rescued from it after the stale age")

	var err error
	m.OutboxPublishLag, err = meter.Float64Histogram("classifier_outbox_publish_lag_seconds", metric.WithUnit("s"),
		metric.WithDescription("Time between outbox insert and publish"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120))
	errs = append(errs, err)
	m.BreakerState, err = meter.Int64Gauge("publisher_redis_breaker_state",
		metric.WithDescription("Redis circuit breaker state: 0 closed, 1 half-open, 2 open"))
	errs = append(errs, err)
	m.DependencyBreakerState, err = meter.Int64Gauge("publisher_breaker_state",
		metric.WithDescription("Circuit breaker state by dependency: 0 closed, 1 half-open, 2 open"))
	errs = append(errs, err)
	m.WorkerEnabled, err = meter.Int64Gauge("publisher_outbox_worker_enabled",
		metric.WithDescription("1 while the outbox worker runs, 0 when PUBLISHER_OUTBOX_ENABLED=false switched it off"))
	errs = append(errs, err)
	m.BatchSize, err = meter.Int64Histogram("publisher_outbox_batch_size",
		metric.WithDescription("Rows per claimed outbox batch"),
		metric.WithExplicitBucketBoundaries(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000))
	errs = append(errs, err)

	gauge, err := meter.Int64ObservableGauge("classifier_outbox_backlog",
		metric.WithDescription("Current unpublished documents in outbox, by status"))
	errs = append(errs, err)
	age, err := meter.Float64ObservableGauge("publisher_outbox_oldest_pending_age_seconds", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest pending outbox row (0 when none is pending)"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	_, err = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		b, err := backlog(ctx)
		if err != nil {
			return err
		}
		for _, s := range []domain.OutboxStatus{domain.OutboxStatusPending, domain.OutboxStatusPublishing, domain.OutboxStatusFailed} {
			o.ObserveInt64(gauge, b.Counts[s], metric.WithAttributes(attribute.String("status", string(s))))
		}
		o.ObserveFloat64(age, b.OldestPendingAgeSeconds)
		return nil
	}, gauge, age)
	if err != nil {
		return nil, err
	}
	return m, nil
}
