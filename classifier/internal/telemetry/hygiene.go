package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// RecordHygiene counts one committed document: a duplicate of kind (empty
// for an original), whether it reached the outbox, and as which version.
func (m *Metrics) RecordHygiene(ctx context.Context, source, kind string, published bool, version int) {
	src := attribute.String("source", source)
	if kind != "" {
		m.Duplicates.Add(ctx, 1, metric.WithAttributes(src, attribute.String("kind", kind)))
	}
	decision := "unchanged"
	switch {
	case published && version <= 1:
		decision = "first"
	case published:
		decision = "changed"
	case kind != "" && version == 0:
		decision = "held"
	}
	m.Publications.Add(ctx, 1, metric.WithAttributes(src, attribute.String("decision", decision)))
}
