package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/telemetry"
)

func newProvider(t *testing.T, cfg telemetry.Config) *telemetry.Provider {
	t.Helper()
	p, err := telemetry.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape status = %d", rec.Code)
	}
	return rec.Body.String()
}

func TestMetricNamesMatchInstrumentNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newProvider(t, telemetry.Config{ServiceName: "classifier", ServiceVersion: "test"})
	m := p.Meter("classifier")

	processed, err := m.Int64Counter("classifier_documents_processed_total")
	if err != nil {
		t.Fatal(err)
	}
	duration, err := m.Float64Histogram("classifier_processing_duration_seconds", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets()...))
	if err != nil {
		t.Fatal(err)
	}
	depth, err := m.Int64UpDownCounter("classifier_queue_depth")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := m.Int64Histogram("classifier_batch_size")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Int64ObservableGauge("classifier_workers_busy",
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(3); return nil })); err != nil {
		t.Fatal(err)
	}
	processed.Add(ctx, 2)
	duration.Record(ctx, 0.25)
	depth.Add(ctx, 5)
	depth.Add(ctx, -2)
	batch.Record(ctx, 100)

	body := scrape(t, p.Handler())
	for _, want := range []string{
		"# TYPE classifier_documents_processed_total counter",
		"\nclassifier_documents_processed_total 2\n",
		"# TYPE classifier_processing_duration_seconds histogram",
		"\nclassifier_processing_duration_seconds_bucket{le=\"0.1\"} 0\n",
		"\nclassifier_processing_duration_seconds_bucket{le=\"0.25\"} 1\n",
		"\nclassifier_processing_duration_seconds_count 1\n",
		"# TYPE classifier_queue_depth gauge",
		"\nclassifier_queue_depth 3\n",
		"# TYPE classifier_batch_size histogram",
		"\nclassifier_batch_size_bucket{le=",
		"\nclassifier_batch_size_sum 100\n",
		"\nclassifier_workers_busy 3\n",
		"\ngo_goroutines ",
		"\nprocess_start_time_seconds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, unwanted := range []string{"_total_total", "_seconds_seconds", "classifier_queue_depth_total", "classifier_batch_size_ratio", "otel_scope", "target_info"} {
		if strings.Contains(body, unwanted) {
			t.Errorf("/metrics contains %q", unwanted)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

func TestProvidersDoNotShareRegistries(t *testing.T) {
	t.Parallel()
	a := newProvider(t, telemetry.Config{ServiceName: "a"})
	b := newProvider(t, telemetry.Config{ServiceName: "b"})
	counter, err := a.Meter("a").Int64Counter("only_in_a_total")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 1)
	if !strings.Contains(scrape(t, a.Handler()), "only_in_a_total 1") {
		t.Error("provider a does not export its own counter")
	}
	if strings.Contains(scrape(t, b.Handler()), "only_in_a_total") {
		t.Error("provider b exports provider a's counter")
	}
	if a.Registry() == b.Registry() {
		t.Error("providers share a registry")
	}
}

func TestTracesAreExportedOverOTLPHTTP(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	var path atomic.Value
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		path.Store(r.URL.Path)
		hits.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(collector.Close)

	p, err := telemetry.New(context.Background(), telemetry.Config{ServiceName: "svc", OTLPEndpoint: collector.URL + "/otlp/"})
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	_, span := p.Tracer("test").Start(context.Background(), "op")
	if !span.SpanContext().IsValid() {
		t.Fatal("span from configured tracer is not recording a valid span context")
	}
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() error = %v", err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown() error = %v", err)
	}
	if hits.Load() == 0 {
		t.Fatal("collector received no export request")
	}
	if got := path.Load(); got != "/otlp/v1/traces" {
		t.Errorf("export path = %v, want /otlp/v1/traces", got)
	}
}

func TestTracingDisabledWithoutEndpoint(t *testing.T) {
	t.Parallel()
	p := newProvider(t, telemetry.Config{ServiceName: "svc"})
	_, span := p.Tracer("test").Start(context.Background(), "op")
	defer span.End()
	if span.SpanContext().IsValid() || span.IsRecording() {
		t.Error("tracer without endpoint produced a real span")
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  telemetry.Config
		want string
	}{
		{"no service", telemetry.Config{}, "ServiceName is required"},
		{"bad endpoint", telemetry.Config{ServiceName: "s", OTLPEndpoint: "collector:4318"}, "OTLPEndpoint must be an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := telemetry.New(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() error = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		endpoint string
		wantErr  bool
	}{
		{"unset", nil, "", false},
		{"set", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318"}, "http://otel:4318", false},
		{"invalid", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://otel:4317"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := config.NewFromMap(tt.env)
			cfg := telemetry.ConfigFromEnv(l, "svc")
			if cfg.ServiceName != "svc" || cfg.OTLPEndpoint != tt.endpoint {
				t.Errorf("ConfigFromEnv = %+v", cfg)
			}
			if err := l.Err(); (err != nil) != tt.wantErr {
				t.Errorf("Err() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
