package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	infratelemetry "github.com/north-cloud/infrastructure/telemetry"
)

// serviceName names the publisher's meter and tracer, as cmd/publisher does.
const serviceName = "publisher"

// Provider is the publisher's telemetry.Provider of the original design,
// which its outbox worker called RecordOutboxPublish on (architecture.md
// 4.4): the publisher's instruments with a tracer and the /metrics handler.
// The design kept the outbox metrics on the classifier's Provider (3.1);
// here the publisher, which publishes, owns them under the same names. The
// service builds the same from infrastructure/telemetry.Provider and New.
type Provider struct {
	Tracer  trace.Tracer
	Metrics *Metrics
	base    *infratelemetry.Provider
}

// NewProvider builds a Provider on a Prometheus registry of its own. The
// design gives the publisher's no signature; it takes backlog because
// classifier_outbox_backlog is read from the outbox table at scrape time
// (Repository.Backlog), where the design kept it as deltas that drift.
// Shutdown releases it.
func NewProvider(ctx context.Context, backlog BacklogFunc) (*Provider, error) {
	base, err := infratelemetry.New(ctx, infratelemetry.Config{ServiceName: serviceName})
	if err != nil {
		return nil, fmt.Errorf("new telemetry provider: %w", err)
	}
	m, err := New(base.Meter(serviceName), backlog)
	if err != nil {
		_ = base.Shutdown(ctx)
		return nil, fmt.Errorf("new telemetry provider: %w", err)
	}
	return &Provider{Tracer: base.Tracer(serviceName), Metrics: m, base: base}, nil
}

// Handler serves the Provider's metrics in the Prometheus text format.
func (p *Provider) Handler() http.Handler { return p.base.Handler() }

// Shutdown flushes and stops the Provider; it is idempotent.
func (p *Provider) Shutdown(ctx context.Context) error { return p.base.Shutdown(ctx) }

// RecordOutboxPublish records one publish attempt of a row inserted at
// insertedAt. A success counts in classifier_outbox_published_total and its
// lag (insert to publish) in classifier_outbox_publish_lag_seconds; a
// failure counts in publisher_outbox_failed_total, and not in the lag,
// which measures published rows only (the design recorded both). Neither
// touches classifier_outbox_backlog, which is read from the table. The
// worker records the same with the row's channel, which this signature does
// not carry. It does nothing on a nil Provider, as the design's callers
// expected.
func (p *Provider) RecordOutboxPublish(ctx context.Context, insertedAt time.Time, success bool) {
	if p == nil {
		return
	}
	if !success {
		p.Metrics.OutboxFailed.Add(ctx, 1)
		return
	}
	p.Metrics.OutboxPublished.Add(ctx, 1)
	p.Metrics.OutboxPublishLag.Record(ctx, time.Since(insertedAt).Seconds())
}
