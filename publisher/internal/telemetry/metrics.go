// Package telemetry declares the publisher's metrics. The outbox metrics keep
// the names of the spec's telemetry package (classifier_outbox_*), since
// alerts and dashboards are written against them.
package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/publisher/internal/domain"
)

// Metrics holds the publisher's instruments.
type Metrics struct {
	OutboxPublished  metric.Int64Counter
	OutboxFailed     metric.Int64Counter
	OutboxPublishLag metric.Float64Histogram
	NoReceivers      metric.Int64Counter
}

// New creates the instruments and the backlog gauge, which reads the
// outbox's row counts by status at scrape time.
func New(meter metric.Meter, countByStatus func(ctx context.Context) (map[domain.OutboxStatus]int64, error)) (*Metrics, error) {
	m := &Metrics{}
	var errs []error
	var err error
	m.OutboxPublished, err = meter.Int64Counter("classifier_outbox_published_total", metric.WithDescription("Total documents published from outbox"))
	errs = append(errs, err)
	m.OutboxFailed, err = meter.Int64Counter("publisher_outbox_failed_total", metric.WithDescription("Publish attempts that failed and were scheduled for retry"))
	errs = append(errs, err)
	m.OutboxPublishLag, err = meter.Float64Histogram("classifier_outbox_publish_lag_seconds", metric.WithUnit("s"),
		metric.WithDescription("Time between outbox insert and publish"),
		metric.WithExplicitBucketBoundaries(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120))
	errs = append(errs, err)
	m.NoReceivers, err = meter.Int64Counter("publisher_publish_no_receivers_total", metric.WithDescription("Messages published to a channel nobody was subscribed to"))
	errs = append(errs, err)
	_, err = meter.Int64ObservableGauge("classifier_outbox_backlog", metric.WithDescription("Current unpublished documents in outbox, by status"),
		metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			counts, err := countByStatus(ctx)
			if err != nil {
				return err
			}
			for _, s := range []domain.OutboxStatus{domain.OutboxStatusPending, domain.OutboxStatusPublishing, domain.OutboxStatusFailed} {
				o.Observe(counts[s], metric.WithAttributes(attribute.String("status", string(s))))
			}
			return nil
		}))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}
