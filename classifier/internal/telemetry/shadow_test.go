package telemetry

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/infrastructure/testenv"
)

// Comparisons of a matcher rollout are counted by the side that answered,
// disagreements too, both sides present from the first scrape.
func TestShadowComparisonsBySide(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	m, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"), Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	record := m.ShadowComparison(context.Background(), testenv.Logger(t))
	record(rules.Comparison{Side: rules.SideCurrent, Agree: true})
	record(rules.Comparison{Side: rules.SideCandidate, Agree: true})
	record(rules.Comparison{Side: rules.SideCandidate, Agree: false})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "classifier_shadow_comparisons_total" && mt.Name != "classifier_shadow_disagreements_total" {
				continue
			}
			got[mt.Name] = map[string]int64{}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				side, _ := dp.Attributes.Value("side")
				got[mt.Name][side.AsString()] = dp.Value
			}
		}
	}
	if c := got["classifier_shadow_comparisons_total"]; len(c) != 2 || c["current"] != 1 || c["candidate"] != 2 {
		t.Errorf("comparisons by side = %v, want current 1, candidate 2", c)
	}
	if d := got["classifier_shadow_disagreements_total"]; len(d) != 2 || d["current"] != 0 || d["candidate"] != 1 {
		t.Errorf("disagreements by side = %v, want current 0, candidate 1", d)
	}
}
