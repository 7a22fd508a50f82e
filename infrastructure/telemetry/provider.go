// Package telemetry gives each service its OpenTelemetry meter and tracer
// providers and the Prometheus handler that serves its /metrics, without
// touching any global registry or provider, so two services (or two tests)
// in one process never share or collide on metrics.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/north-cloud/infrastructure/config"
)

// Config names the service in its telemetry and chooses where traces go.
type Config struct {
	// ServiceName becomes the service.name resource attribute. Required.
	ServiceName string
	// ServiceVersion becomes the service.version resource attribute.
	ServiceVersion string
	// OTLPEndpoint is the base URL of an OTLP/HTTP collector (the
	// "/v1/traces" path is appended). Empty disables tracing: spans are
	// created by a no-op provider and cost nothing (OTEL_EXPORTER_OTLP_ENDPOINT).
	OTLPEndpoint string
	// TracesFile, when set, is a file that finished spans are appended to,
	// one JSON object per span (the OpenTelemetry stdout exporter's form),
	// for a native run with no collector. It may be set with OTLPEndpoint:
	// spans then go to both (OTEL_TRACES_FILE).
	TracesFile string
	// SpanExporter, when set, receives every span synchronously as it ends,
	// beside the endpoint and the file: tests read a trace from an
	// in-memory exporter with it.
	SpanExporter sdktrace.SpanExporter
}

// ConfigFromEnv reads OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_TRACES_FILE,
// recording an invalid URL on l.
func ConfigFromEnv(l *config.Loader, service string) Config {
	return Config{
		ServiceName:  service,
		OTLPEndpoint: l.URL("OTEL_EXPORTER_OTLP_ENDPOINT", "", "http", "https"),
		TracesFile:   l.String("OTEL_TRACES_FILE", ""),
	}
}

// tracing reports whether any span destination is configured.
func (c Config) tracing() bool {
	return c.OTLPEndpoint != "" || c.TracesFile != "" || c.SpanExporter != nil
}

func (c Config) validate() error {
	if c.ServiceName == "" {
		return errors.New("ServiceName is required")
	}
	if c.OTLPEndpoint != "" {
		u, err := url.Parse(c.OTLPEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("OTLPEndpoint must be an http or https URL (got %q)", c.OTLPEndpoint)
		}
	}
	return nil
}

// tracesURL turns the base endpoint into the traces URL, as the
// OTEL_EXPORTER_OTLP_ENDPOINT specification prescribes.
func (c Config) tracesURL() string {
	u, _ := url.Parse(c.OTLPEndpoint) // validated
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	return u.String()
}

// Provider owns a service's meter and tracer providers and the Prometheus
// registry its /metrics serves. Shutdown flushes pending spans.
type Provider struct {
	registry *prometheus.Registry
	meters   *sdkmetric.MeterProvider
	tracers  trace.TracerProvider
	// sdkTracers is nil when tracing is disabled.
	sdkTracers *sdktrace.TracerProvider
	// tracesFile is the open OTEL_TRACES_FILE, closed by Shutdown.
	tracesFile *os.File

	shutdownOnce sync.Once
	shutdownErr  error
}

// New builds the providers. Metrics are exported through the OpenTelemetry
// Prometheus exporter onto a registry of the Provider's own, beside the Go
// runtime and process collectors. Instrument names appear on /metrics as
// written when they already follow Prometheus conventions: counters ending
// in "_total" and durations ending in "_seconds" with unit "s" are not
// suffixed again, and no target_info or otel_scope_* labels are added.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new telemetry: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(cfg.ServiceName),
		semconv.ServiceVersion(cfg.ServiceVersion),
	))
	if err != nil {
		return nil, fmt.Errorf("new telemetry: resource: %w", err)
	}

	registry := prometheus.NewRegistry()
	if err := registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("new telemetry: register go collector: %w", err)
	}
	if err := registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("new telemetry: register process collector: %w", err)
	}
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("new telemetry: prometheus exporter: %w", err)
	}
	p := &Provider{
		registry: registry,
		meters:   sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithResource(res)),
		tracers:  noop.NewTracerProvider(),
	}

	if cfg.tracing() {
		if err := p.startTracing(ctx, cfg, res); err != nil {
			_ = p.meters.Shutdown(ctx)
			return nil, fmt.Errorf("new telemetry: %w", err)
		}
	}
	return p, nil
}

// startTracing builds the SDK tracer provider over every configured span
// destination. Spans are exported in batches, except to cfg.SpanExporter,
// which sees each span as it ends.
func (p *Provider) startTracing(ctx context.Context, cfg Config, res *resource.Resource) error {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if cfg.OTLPEndpoint != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.tracesURL()))
		if err != nil {
			return fmt.Errorf("otlp trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if cfg.TracesFile != "" {
		f, err := os.OpenFile(cfg.TracesFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open traces file: %w", err)
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("file trace exporter: %w", err)
		}
		p.tracesFile = f
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if cfg.SpanExporter != nil {
		opts = append(opts, sdktrace.WithSyncer(cfg.SpanExporter))
	}
	p.sdkTracers = sdktrace.NewTracerProvider(opts...)
	p.tracers = p.sdkTracers
	return nil
}

// Meter returns a meter whose instruments are exported on Handler.
func (p *Provider) Meter(name string) metric.Meter {
	return p.meters.Meter(name)
}

// Tracer returns a tracer that exports to the configured destinations (OTLP/HTTP,
// the traces file), or a no-op tracer when none is configured.
func (p *Provider) Tracer(name string) trace.Tracer {
	return p.tracers.Tracer(name)
}

// TracerProvider returns the underlying tracer provider, for libraries that
// take one (HTTP or database instrumentation).
func (p *Provider) TracerProvider() trace.TracerProvider {
	return p.tracers
}

// Handler serves the Provider's registry in the Prometheus text format; mount
// it at /metrics.
func (p *Provider) Handler() http.Handler {
	return promhttp.HandlerFor(p.registry, promhttp.HandlerOpts{Registry: p.registry})
}

// Registry returns the Provider's registry so a service can register plain
// Prometheus collectors beside its OpenTelemetry instruments.
func (p *Provider) Registry() *prometheus.Registry {
	return p.registry
}

// Shutdown flushes pending spans and stops the providers, bounded by ctx.
// It is idempotent: later calls return the first call's result.
func (p *Provider) Shutdown(ctx context.Context) error {
	p.shutdownOnce.Do(func() {
		var errs []error
		if p.sdkTracers != nil {
			if err := p.sdkTracers.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("tracer provider: %w", err))
			}
		}
		if p.tracesFile != nil {
			if err := p.tracesFile.Close(); err != nil {
				errs = append(errs, fmt.Errorf("traces file: %w", err))
			}
		}
		if err := p.meters.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("meter provider: %w", err))
		}
		if err := errors.Join(errs...); err != nil {
			p.shutdownErr = fmt.Errorf("shutdown telemetry: %w", err)
		}
	})
	return p.shutdownErr
}

// SecondsBuckets returns histogram boundaries for durations in seconds (5ms
// to 10s, Prometheus' defaults). OpenTelemetry's default boundaries (0, 5,
// 10, 25, ... 10000) suit milliseconds and would put every sub-five-second
// duration in one bucket, so pass these to duration histograms with
// metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets()...).
func SecondsBuckets() []float64 {
	return slices.Clone(prometheus.DefBuckets)
}
