package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	infratelemetry "github.com/north-cloud/infrastructure/telemetry"
)

// serviceName names the classifier's meter and tracer, as cmd/classifier
// does.
const serviceName = "classifier"

// Provider is the original design's telemetry.Provider (architecture.md
// 3.1): the classifier's instruments with a tracer and the /metrics handler,
// built in one call by NewProvider, with its Record helpers. The service
// builds the same from two parts instead, infrastructure/telemetry.Provider
// (registry, exporter, tracer provider, shared by every service) and New
// (the instruments), because New also registers the gauges read at scrape
// time from their owners (the work queues, the dead-letter table, the
// breakers), which NewProvider(ctx) has no way to reach.
type Provider struct {
	Tracer  trace.Tracer
	Metrics *Metrics
	base    *infratelemetry.Provider
}

// NewProvider builds a Provider on a Prometheus registry of its own (never
// the global one, so two providers in one process do not collide), with
// every instrument of Metrics and none of the Gauges. Shutdown releases it.
func NewProvider(ctx context.Context) (*Provider, error) {
	base, err := infratelemetry.New(ctx, infratelemetry.Config{ServiceName: serviceName})
	if err != nil {
		return nil, fmt.Errorf("new telemetry provider: %w", err)
	}
	m, err := New(base.Meter(serviceName), Gauges{})
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

// RecordClassification records one classification of a document of source:
// classifier_documents_processed_total or, when it failed,
// classifier_documents_failed_total, and its duration in
// classifier_processing_duration_seconds. The service counts a document at
// its commit instead, a failure with the error code that decides its retries;
// a failure recorded here has none to give and is counted as UNKNOWN. Like
// every Record helper, it does nothing on a nil Provider, as the design's
// callers expected.
func (p *Provider) RecordClassification(ctx context.Context, source string, success bool, duration time.Duration) {
	if p == nil {
		return
	}
	attrs := metric.WithAttributes(attribute.String("source", source))
	if success {
		p.Metrics.DocumentsProcessed.Add(ctx, 1, attrs)
	} else {
		p.Metrics.DocumentsFailed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", source),
			attribute.String("error_code", string(domain.ErrorCodeUnknown))))
	}
	p.Metrics.ProcessingDuration.Record(ctx, duration.Seconds(), attrs)
}

// RecordRuleMatch records one rule-engine match: Metrics.RecordRuleMatch,
// which the pipeline calls for every document. It makes *Provider a
// rules.RuleMatchRecorder, so a TrieRuleEngine records on it.
func (p *Provider) RecordRuleMatch(_ context.Context, duration time.Duration, rulesEvaluated, rulesMatched int) {
	if p == nil {
		return
	}
	p.Metrics.RecordRuleMatch(duration, rulesEvaluated, rulesMatched)
}

// RecordPollerLag records the time from createdAt (when a document became
// pending: its crawl, or a reprocess) to now in
// classifier_poller_lag_seconds, as the worker pool does when it starts on
// a document.
func (p *Provider) RecordPollerLag(ctx context.Context, createdAt time.Time) {
	if p == nil {
		return
	}
	p.Metrics.PollerLag.Record(ctx, time.Since(createdAt).Seconds())
}
