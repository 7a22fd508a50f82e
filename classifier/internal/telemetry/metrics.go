// Package telemetry declares the classifier's metrics and records them. Their
// names are a contract (dashboards, alerts and deploy/opstest's list of
// exported metrics depend on them): a renamed metric is a breaking change.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
)

// Metrics holds every classifier instrument. The Prometheus exporter keeps
// the names as given: counters already end in _total, durations carry unit
// "s" and end in _seconds.
type Metrics struct {
	DocumentsProcessed metric.Int64Counter
	DocumentsFailed    metric.Int64Counter
	DocumentsRetried   metric.Int64Counter
	ProcessingDuration metric.Float64Histogram
	BatchSize          metric.Int64Histogram

	RuleMatchDuration metric.Float64Histogram
	RulesEvaluated    metric.Int64Counter
	RulesMatched      metric.Int64Counter

	ActiveWorkers metric.Int64UpDownCounter
	WorkDropped   metric.Int64Counter
	ThrottleCount metric.Int64Counter

	PollerLag         metric.Float64Histogram
	ClassificationLag metric.Float64Histogram

	ShadowDisagreements metric.Int64Counter
	// ShadowComparisons counts the documents both engines of shadow mode
	// or a matcher rollout matched, by side (the engine that answered):
	// the denominator of ShadowDisagreements.
	ShadowComparisons metric.Int64Counter
	// ModelShadowComparisons counts documents decided by one topic model
	// and scored by the other (the active model and a candidate), by
	// result: agree (same primary topic and crime flag) or disagree.
	ModelShadowComparisons metric.Int64Counter
	// ModelUnusable counts reloads that found a topic model in use that
	// cannot be read or compiled (the model loaded before kept deciding).
	ModelUnusable metric.Int64Counter

	DLQEnqueued  metric.Int64Counter
	DLQProcessed metric.Int64Counter
	DLQExhausted metric.Int64Counter
	// DLQEntries counts documents entering the dead-letter queue (a
	// document's first failure, not its retries), by source and error_code:
	// divided by DocumentsProcessed of the same source it is the source's
	// dead-letter rate.
	DLQEntries metric.Int64Counter
	// DLQPermanent counts entries that failed the same way on consecutive
	// attempts and stopped retrying early, by source and error_code.
	DLQPermanent metric.Int64Counter
	// DLQRetryClaims counts dead-letter entries claimed for a retry, by
	// source: each spends one retry of its source's budget.
	DLQRetryClaims metric.Int64Counter
	// DLQRetriesDeferred counts due entries of a source that had spent its
	// retry budget, moved to the next budget window, by source.
	DLQRetriesDeferred metric.Int64Counter
	// DLQWriteFailures counts failed documents that could not be recorded
	// in the dead-letter queue even alone (the statement refused their
	// row) and were flipped to failed with their reason instead, by source
	// and error_code.
	DLQWriteFailures metric.Int64Counter
	// ReprocessDocuments counts raw documents a reprocess request read, by
	// source and result: requeued (set back to pending at low priority),
	// conflict (changed since read: left alone), error (refused).
	ReprocessDocuments metric.Int64Counter

	// IndexPollFailing is 1 while the poller skips a raw index that failed
	// (its search, its mapping or its claims) and 0 once it polls again;
	// labelled by index (bounded: the raw indices of the pattern).
	IndexPollFailing metric.Int64Gauge
	// IndexPollFailures counts failed polls of one raw index, by index and
	// reason (mapping, search_error, write_blocked).
	IndexPollFailures metric.Int64Counter

	// Duplicates counts documents recorded as duplicates, by source and
	// kind (url, content).
	Duplicates metric.Int64Counter
	// DocumentsRequeued counts classified documents whose raw status was
	// not flipped and whose claim was released, by source and reason.
	DocumentsRequeued metric.Int64Counter
	// Publications counts classified documents by what reached the outbox,
	// by source and decision: first (version 1), changed (a new version),
	// unchanged (the same outcome again: nothing) or held (a duplicate not
	// published).
	Publications metric.Int64Counter

	meter metric.Meter // where Observe registers gauges
}

// Gauges are read at scrape time from their owners (the work queue, the
// dead-letter table) instead of being kept as deltas that drift. Each owner
// registers its own once it is built (Metrics.Observe); a nil gauge is not
// registered.
type Gauges struct {
	// QueueDepth returns the number of documents waiting in the main work
	// queue (classifier_queue_depth{lane="main"}).
	QueueDepth func() int64
	// UrgentQueueDepth, when set, returns the number waiting in the urgent
	// queue (classifier_queue_depth{lane="urgent"}); nil when that queue is
	// turned off.
	UrgentQueueDepth func() int64
	// DLQDepth returns dead-letter rows still to retry, by source.
	DLQDepth func(ctx context.Context) (map[string]int64, error)
	// DLQBacklog returns every dead-letter row by state ("retrying",
	// "exhausted"; permanent entries are exhausted), for
	// classifier_dlq_backlog{state}: classifier_dlq_depth counts only the
	// retrying ones, and reports nothing when there are none.
	DLQBacklog func(ctx context.Context) (retrying, exhausted int64, err error)
	// BreakerStates returns the state of each dependency's circuit breaker
	// (0 closed, 1 half-open, 2 open), by dependency.
	BreakerStates func() map[string]int64
}

// New creates the instruments on meter and registers the observable gauges
// that gauges sets (Observe).
func New(meter metric.Meter, gauges Gauges) (*Metrics, error) {
	m := &Metrics{meter: meter}
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	seconds := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return h
	}
	lagBuckets := []float64{1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

	m.DocumentsProcessed = counter("classifier_documents_processed_total", "Total documents successfully classified")
	m.DocumentsFailed = counter("classifier_documents_failed_total", "Total documents that failed classification")
	m.DocumentsRetried = counter("classifier_documents_retried_total", "Total documents retried from DLQ")
	m.ProcessingDuration = seconds("classifier_processing_duration_seconds", "Time to classify a single document",
		0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
	var err error
	m.BatchSize, err = meter.Int64Histogram("classifier_batch_size", metric.WithDescription("Number of documents per batch"),
		metric.WithExplicitBucketBoundaries(1, 5, 10, 25, 50, 100, 200, 500))
	errs = append(errs, err)

	m.RuleMatchDuration = seconds("classifier_rule_match_duration_seconds", "Time spent in rule matching (Aho-Corasick)",
		0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1)
	m.RulesEvaluated = counter("classifier_rules_evaluated_total", "Total rule evaluations")
	m.RulesMatched = counter("classifier_rules_matched_total", "Total rules that matched")

	m.ActiveWorkers, err = meter.Int64UpDownCounter("classifier_active_workers", metric.WithDescription("Currently active worker goroutines"))
	errs = append(errs, err)
	m.WorkDropped = counter("classifier_work_dropped_total", "Work items dropped due to queue full")
	m.ThrottleCount = counter("classifier_throttle_count_total", "Number of times poller was throttled")

	m.PollerLag = seconds("classifier_poller_lag_seconds", "Time between a document becoming pending (its crawl, or a reprocess) and classification start", lagBuckets...)
	m.ClassificationLag = seconds("classifier_classification_lag_seconds", "End-to-end lag from crawl to classified", lagBuckets...)

	m.ShadowDisagreements = counter("classifier_shadow_disagreements_total", "Documents on which the two rule engines of shadow mode or a matcher rollout disagreed, by side (current, candidate: the engine whose answer was used)")
	m.ShadowComparisons = counter("classifier_shadow_comparisons_total", "Documents matched by both rule engines of shadow mode or a matcher rollout, by side (current, candidate: the engine whose answer was used)")

	m.ModelUnusable = counter("classifier_topic_model_unusable_total", "Rule-set reloads that found a topic model in use (active or candidate) that cannot be read or compiled; the model loaded before keeps deciding (log: stored topic model unusable)")
	m.ModelShadowComparisons = counter("classifier_topic_model_shadow_total", "Documents decided by one topic model and scored by the other (active and candidate), by result (agree: same primary topic and crime flag; disagree)")

	m.DLQEnqueued = counter("classifier_dlq_enqueued_total", "Total documents added to DLQ")
	m.DLQProcessed = counter("classifier_dlq_processed_total", "Total documents successfully processed from DLQ")
	m.DLQExhausted = counter("classifier_dlq_exhausted_total", "Total documents that exhausted all retries")
	m.DLQEntries = counter("classifier_dlq_entries_total", "Documents that entered the dead-letter queue (first failures), by source and error code")
	m.DLQRetryClaims = counter("classifier_dlq_retry_claims_total", "Dead-letter entries claimed for a retry, by source (each spends one retry of the source's budget)")
	m.DLQRetriesDeferred = counter("classifier_dlq_retries_deferred_total", "Due dead-letter entries of a source over its retry budget, moved to the next budget window, by source")
	m.DLQWriteFailures = counter("classifier_dlq_write_failures_total", "Failed documents the dead-letter queue refused even alone, flipped to failed with their reason, by source and error code")
	m.ReprocessDocuments = counter("classifier_reprocess_documents_total", "Raw documents read by a reprocess request, by source and result (requeued, conflict, error)")
	m.DLQPermanent = counter("classifier_dlq_permanent_total", "Dead-letter entries that failed the same way on consecutive attempts and stopped retrying, by source and error code")

	errs = append(errs, m.Observe(gauges))
	m.IndexPollFailing, err = meter.Int64Gauge("classifier_index_poll_failing",
		metric.WithDescription("1 while the poller skips a raw index that failed (search, mapping or claims), 0 while it polls it"))
	errs = append(errs, err)
	m.IndexPollFailures = counter("classifier_index_poll_failures_total", "Failed polls of one raw index, by index and reason")
	m.DocumentsRequeued = counter("classifier_documents_requeued_total", "Classified documents whose raw status was not flipped and whose claim was released, by source and reason (url_claimant_failed: a URL duplicate whose claimant in the same batch failed, left pending; write_blocked: a status flip refused by a write block on the raw index, left pending; index_deleted: the raw index was deleted after the claim, nothing left to flip)")
	m.Duplicates = counter("classifier_duplicates_total", "Documents recorded as duplicates of another, by source and kind (url, content)")
	m.Publications = counter("classifier_publications_total", "Classified documents by what reached the outbox, by source and decision (first, changed, unchanged, held)")

	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Counters start at zero, so every series exists from the first scrape
	// and rate() and increase() work from the first increment.
	ctx := context.Background()
	for _, c := range []metric.Int64Counter{m.DocumentsProcessed, m.DocumentsFailed, m.DocumentsRetried, m.RulesEvaluated,
		m.RulesMatched, m.WorkDropped, m.ThrottleCount, m.DLQEnqueued, m.DLQProcessed, m.DLQExhausted} {
		c.Add(ctx, 0)
	}
	for _, side := range []rules.Side{rules.SideCurrent, rules.SideCandidate} {
		attrs := metric.WithAttributes(attribute.String("side", string(side)))
		m.ShadowDisagreements.Add(ctx, 0, attrs)
		m.ShadowComparisons.Add(ctx, 0, attrs)
	}
	m.ActiveWorkers.Add(ctx, 0)
	return m, nil
}

// Observe registers the observable gauges that gauges sets, read at scrape
// time from their owners. Each gauge is registered once: by New, or by its
// owner once that is built.
func (m *Metrics) Observe(gauges Gauges) error {
	var errs []error
	if gauges.QueueDepth != nil {
		mainLane, urgentLane := metric.WithAttributes(attribute.String("lane", "main")), metric.WithAttributes(attribute.String("lane", "urgent"))
		_, err := m.meter.Int64ObservableGauge("classifier_queue_depth", metric.WithDescription("Current pending documents in work queue, by lane (main, urgent)"),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(gauges.QueueDepth(), mainLane)
				if gauges.UrgentQueueDepth != nil {
					o.Observe(gauges.UrgentQueueDepth(), urgentLane)
				}
				return nil
			}))
		errs = append(errs, err)
	}
	if gauges.DLQDepth != nil {
		_, err := m.meter.Int64ObservableGauge("classifier_dlq_depth", metric.WithDescription("Current documents in dead-letter queue"),
			metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
				ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				bySource, err := gauges.DLQDepth(ctx)
				if err != nil {
					return err
				}
				for source, n := range bySource {
					o.Observe(n, metric.WithAttributes(attribute.String("source", source)))
				}
				return nil
			}))
		errs = append(errs, err)
	}
	if gauges.DLQBacklog != nil {
		_, err := m.meter.Int64ObservableGauge("classifier_dlq_backlog", metric.WithDescription("Dead-letter entries by state (retrying, exhausted), zeros included"),
			metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
				ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				retrying, exhausted, err := gauges.DLQBacklog(ctx)
				if err != nil {
					return err
				}
				o.Observe(retrying, metric.WithAttributes(attribute.String("state", "retrying")))
				o.Observe(exhausted, metric.WithAttributes(attribute.String("state", "exhausted")))
				return nil
			}))
		errs = append(errs, err)
	}
	if gauges.BreakerStates != nil {
		_, err := m.meter.Int64ObservableGauge("classifier_breaker_state",
			metric.WithDescription("Circuit breaker of each dependency: 0 closed, 1 half-open, 2 open (work that needs it is paused)"),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				for dep, state := range gauges.BreakerStates() {
					o.Observe(state, metric.WithAttributes(attribute.String("dependency", dep)))
				}
				return nil
			}))
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("observe gauges: %w", err)
	}
	return nil
}

// RecordRuleMatch records one rule-engine match (spec names).
func (m *Metrics) RecordRuleMatch(d time.Duration, evaluated, matched int) {
	ctx := context.Background()
	m.RuleMatchDuration.Record(ctx, d.Seconds())
	m.RulesEvaluated.Add(ctx, int64(evaluated))
	m.RulesMatched.Add(ctx, int64(matched))
}

// ShadowComparison returns the callback of shadow mode and a matcher
// rollout (rules.ShadowConfig.OnCompare): it counts every comparison in
// classifier_shadow_comparisons_total and every disagreement in
// classifier_shadow_disagreements_total, both by side (the engine whose
// answer was used), and logs a disagreement's two topic lists.
func (m *Metrics) ShadowComparison(ctx context.Context, logger *slog.Logger) func(rules.Comparison) {
	ctx = context.WithoutCancel(ctx)
	return func(c rules.Comparison) {
		attrs := metric.WithAttributes(attribute.String("side", string(c.Side)))
		m.ShadowComparisons.Add(ctx, 1, attrs)
		if c.Agree {
			return
		}
		m.ShadowDisagreements.Add(ctx, 1, attrs)
		logger.InfoContext(ctx, "shadow rule engine disagrees", "component", "rules_shadow", "side", string(c.Side),
			"answered_topics", topicsOf(c.Answered), "other_topics", topicsOf(c.Other))
	}
}

// ModelUnusableHook returns the model reloader's OnUnusable: each unusable
// model counted.
func (m *Metrics) ModelUnusableHook(ctx context.Context) func(id int64, err error) {
	ctx = context.WithoutCancel(ctx)
	return func(int64, error) { m.ModelUnusable.Add(ctx, 1) }
}

// ModelShadow returns the pipeline's OnModelShadow: each comparison of the
// deciding topic model with the shadow one, counted, and logged when they
// disagree.
func (m *Metrics) ModelShadow(ctx context.Context, logger *slog.Logger) func(decided, shadow topicmodel.Decision) {
	ctx = context.WithoutCancel(ctx)
	agree := metric.WithAttributes(attribute.String("result", "agree"))
	disagree := metric.WithAttributes(attribute.String("result", "disagree"))
	return func(d, s topicmodel.Decision) {
		if d.Primary == s.Primary && d.Crime == s.Crime {
			m.ModelShadowComparisons.Add(ctx, 1, agree)
			return
		}
		m.ModelShadowComparisons.Add(ctx, 1, disagree)
		logger.DebugContext(ctx, "shadow topic model disagrees", "component", "model_shadow",
			"decided", d.Primary, "decided_crime", d.Crime, "shadow", s.Primary, "shadow_crime", s.Crime)
	}
}

func topicsOf(ms []rules.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s:%.3f", m.Topic(), m.Score)
	}
	return out
}
