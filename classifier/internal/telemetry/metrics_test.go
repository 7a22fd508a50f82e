package telemetry

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// queueDepths collects classifier_queue_depth by its lane label.
func queueDepths(t *testing.T, gauges Gauges) map[string]int64 {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	if _, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"), gauges); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "classifier_queue_depth" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
				lane, _ := dp.Attributes.Value("lane")
				out[lane.AsString()] = dp.Value
			}
		}
	}
	return out
}

// The urgent queue's documents wait too: classifier_queue_depth reports both
// lanes, and only the main one when the urgent queue is off.
func TestQueueDepthByLane(t *testing.T) {
	t.Parallel()
	got := queueDepths(t, Gauges{QueueDepth: func() int64 { return 420 }, UrgentQueueDepth: func() int64 { return 7 }})
	if len(got) != 2 || got["main"] != 420 || got["urgent"] != 7 {
		t.Errorf("classifier_queue_depth by lane = %v, want main 420 and urgent 7", got)
	}
	got = queueDepths(t, Gauges{QueueDepth: func() int64 { return 3 }})
	if len(got) != 1 || got["main"] != 3 {
		t.Errorf("with the urgent queue off: %v, want main 3 only", got)
	}
}

// Every dead-letter entry is on /metrics by state, zeros included, so a chart
// of the queue reads 0 when it is empty instead of losing its series.
func TestDLQBacklogByState(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	backlog := func(context.Context) (int64, int64, error) { return 0, 4, nil }
	if _, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"), Gauges{DLQBacklog: backlog}); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "classifier_dlq_backlog" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
				state, _ := dp.Attributes.Value("state")
				got[state.AsString()] = dp.Value
			}
		}
	}
	if len(got) != 2 || got["retrying"] != 0 || got["exhausted"] != 4 {
		t.Errorf("classifier_dlq_backlog by state = %v, want retrying 0 and exhausted 4", got)
	}
}
