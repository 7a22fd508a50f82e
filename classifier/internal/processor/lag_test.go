package processor

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/north-cloud/classifier/internal/domain"
	classtel "github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/testenv"
)

// pollerLag returns the count and sum of classifier_poller_lag_seconds.
func pollerLag(t *testing.T, r *sdkmetric.ManualReader) (uint64, float64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "classifier_poller_lag_seconds" {
				continue
			}
			var n uint64
			var sum float64
			for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				n += p.Count
				sum += p.Sum
			}
			return n, sum
		}
	}
	return 0, 0
}

// The poller lag is counted from when a document became pending: a
// document a reprocess queued again a second ago waited a second, not the
// month since its crawl. A dead-letter retry was not polled and is not
// counted at all.
func TestPollerLagCountsFromPendingNotFromCrawl(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	metrics, err := classtel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("t"), classtel.Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	close(release)
	out := make(chan Result, 10)
	b := NewBatchProcessor(BatchProcessorConfig{Concurrency: 1, MaxQueueDepth: 4}, gate{release: release}, Output{C: out},
		metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	month := 30 * 24 * time.Hour
	requeued := doc("requeued")
	requeued.CrawledAt = time.Now().Add(-month)
	since := time.Now().Add(-time.Second)
	requeued.PendingSince = &since
	retried := doc("retried")
	retried.CrawledAt = time.Now().Add(-month)
	retried.FromDLQ = true
	for _, d := range []*domain.RawContent{requeued, retried} {
		if err := b.Submit(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, sum := pollerLag(t, reader)
	if n != 1 || sum < 1 || sum > time.Hour.Seconds() {
		t.Errorf("poller lag: %d observations summing %.0f s; want the requeued document's one, about 1 s", n, sum)
	}

	fresh := doc("fresh")
	fresh.CrawledAt = time.Now().Add(-month)
	if got := fresh.WaitingSince(); !got.Equal(fresh.CrawledAt) {
		t.Errorf("a document pending since its crawl waits since %s, want its crawl %s", got, fresh.CrawledAt)
	}
}
