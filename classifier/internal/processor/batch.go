// Package processor runs classification on a bounded worker pool and
// commits the results in batches: classified documents, history rows and
// outbox rows first, the raw status flip last (the commit point).
package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/lifecycle"
	tracectx "github.com/north-cloud/infrastructure/telemetry"
)

// Defaults of BatchProcessorConfig.
const (
	ConcurrencyDefault   = 10
	MaxQueueDepthDefault = 500
	SubmitTimeoutDefault = 30 * time.Second
	// ThrottleRatio is the queue fill above which the poller holds off.
	ThrottleRatio = 0.8
)

// ErrStopped is returned by Submit once the processor is stopping.
var ErrStopped = errors.New("batch processor stopped")

// ErrQueueFull is returned by Submit when the queue had no room within the
// submit timeout.
var ErrQueueFull = errors.New("queue full")

// Result is the outcome of classifying one document.
type Result struct {
	Raw *domain.RawContent
	// Doc is set on success.
	Doc *domain.ClassifiedContent
	// Err and Code are set on failure.
	Err  error
	Code domain.ErrorCode
}

// Output is where the workers send results: the committer. Done, when not
// nil, closes when nothing takes results any more; a worker then drops its
// result instead of blocking (the document stays claimed: the heartbeat
// releases it at stop, or its lease returns it).
type Output struct {
	C    chan<- Result
	Done <-chan struct{}
}

// Pipeline classifies one raw document: what each worker runs
// (pipeline.Pipeline in the service).
type Pipeline interface {
	Classify(raw *domain.RawContent) (*domain.ClassifiedContent, error)
}

// BatchProcessorConfig sizes the pool.
type BatchProcessorConfig struct {
	// Concurrency is the number of workers. Defaults to ConcurrencyDefault.
	Concurrency int
	// MaxQueueDepth bounds the work queue. Defaults to MaxQueueDepthDefault.
	MaxQueueDepth int
	// SubmitTimeout bounds how long Submit waits for room.
	// Defaults to SubmitTimeoutDefault.
	SubmitTimeout time.Duration
}

func (c *BatchProcessorConfig) setDefaults() {
	c.Concurrency = config.PositiveOr(c.Concurrency, ConcurrencyDefault)
	c.MaxQueueDepth = config.PositiveOr(c.MaxQueueDepth, MaxQueueDepthDefault)
	c.SubmitTimeout = config.PositiveOr(c.SubmitTimeout, SubmitTimeoutDefault)
}

// BatchProcessor classifies submitted documents on a fixed pool of workers
// and sends every result, success or failure, to out. It never drops a
// document it accepted: Stop drains the queue.
type BatchProcessor struct {
	cfg      BatchProcessorConfig
	pipeline Pipeline
	out      Output
	metrics  *telemetry.Metrics
	tracer   trace.Tracer
	logger   *slog.Logger

	queue    chan *domain.RawContent
	stopping chan struct{} // closed by the first Stop: wakes blocked Submits
	stopOnce sync.Once

	base lifecycle.Base // owns the workers

	mu        sync.RWMutex // guards accepting and closed against Submit
	accepting bool         // started and not stopped
	closed    bool         // the queue is closed
}

// NewBatchProcessor returns a processor that sends results to out.
func NewBatchProcessor(cfg BatchProcessorConfig, p Pipeline, out Output, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) *BatchProcessor {
	cfg.setDefaults()
	return &BatchProcessor{
		cfg: cfg, pipeline: p, out: out, metrics: metrics, tracer: tracer,
		logger:   logger.With("component", "batch_processor"),
		queue:    make(chan *domain.RawContent, cfg.MaxQueueDepth),
		stopping: make(chan struct{}),
	}
}

// Start launches the workers. Starting a started processor does nothing; a
// stopped one does not start again (ErrStopped).
func (b *BatchProcessor) Start(ctx context.Context) error {
	err := b.base.StartFunc(ctx, func(run context.Context) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed {
			return ErrStopped
		}
		work := context.WithoutCancel(run) // Stop, by closing the queue, ends the work
		for i := range b.cfg.Concurrency {
			b.base.Go(func() { b.worker(work, i) })
		}
		b.accepting = true
		return nil
	})
	switch {
	case errors.Is(err, lifecycle.ErrStopped):
		return ErrStopped
	case err != nil:
		return fmt.Errorf("start batch processor: %w", err)
	}
	b.logger.InfoContext(ctx, "batch processor started", "workers", b.cfg.Concurrency, "max_queue_depth", b.cfg.MaxQueueDepth)
	return nil
}

// Stop refuses new work, lets the workers finish everything already queued,
// and waits for them, bounded by ctx. The results still reach out. It is
// idempotent and safe before Start.
func (b *BatchProcessor) Stop(ctx context.Context) error {
	// Wake Submit calls blocked on a full queue first: they hold the read
	// lock that the write lock below waits for.
	b.stopOnce.Do(func() { close(b.stopping) })
	b.mu.Lock()
	first := !b.closed
	if first {
		b.closed, b.accepting = true, false
		close(b.queue)
	}
	b.mu.Unlock()
	if first {
		b.logger.InfoContext(ctx, "draining work queue", "remaining_items", len(b.queue))
	}
	if err := b.base.Stop(ctx); err != nil {
		return fmt.Errorf("stop batch processor with %d documents queued: %w", len(b.queue), err)
	}
	if first {
		b.logger.InfoContext(ctx, "batch processor stopped")
	}
	return nil
}

// Submit adds item to the work queue, waiting at most SubmitTimeout for
// room (backpressure): SubmitWithTimeout with the configured timeout.
func (b *BatchProcessor) Submit(ctx context.Context, item *domain.RawContent) error {
	return b.SubmitWithTimeout(ctx, item, b.cfg.SubmitTimeout)
}

// SubmitWithTimeout adds item to the work queue, waiting at most timeout for
// room. A full queue past the timeout is ErrQueueFull (the document is
// counted in classifier_work_dropped_total and stays claimed, so the lease
// brings it back); a stopping processor is ErrStopped.
func (b *BatchProcessor) SubmitWithTimeout(ctx context.Context, item *domain.RawContent, timeout time.Duration) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if !b.accepting {
		return ErrStopped
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case b.queue <- item:
		return nil
	case <-b.stopping:
		return ErrStopped
	case <-ctx.Done():
		b.metrics.WorkDropped.Add(context.WithoutCancel(ctx), 1)
		return fmt.Errorf("submit %s: %w", item.ID, ctx.Err())
	case <-timer.C:
		b.metrics.WorkDropped.Add(ctx, 1)
		return fmt.Errorf("submit %s: %w for %s", item.ID, ErrQueueFull, timeout)
	}
}

// QueueDepth returns the number of queued documents.
func (b *BatchProcessor) QueueDepth() int { return len(b.queue) }

// FreeSlots returns how many documents the queue can take without waiting.
func (b *BatchProcessor) FreeSlots() int { return b.cfg.MaxQueueDepth - len(b.queue) }

// ShouldThrottle reports whether the queue is more than 80% full.
func (b *BatchProcessor) ShouldThrottle() bool {
	return float64(len(b.queue)) > float64(b.cfg.MaxQueueDepth)*ThrottleRatio
}

func (b *BatchProcessor) worker(ctx context.Context, id int) {
	b.metrics.ActiveWorkers.Add(ctx, 1)
	defer b.metrics.ActiveWorkers.Add(ctx, -1)
	for item := range b.queue {
		res := b.process(ctx, id, item)
		select {
		case b.out.C <- res:
		case <-b.out.Done:
			b.logger.WarnContext(ctx, "committer stopped; result dropped, the claim is released or returns after the lease",
				"content_id", item.ID, "index", item.Index)
		}
	}
}

// ErrStalled is the error of a document whose lease expired without a
// commit CLASSIFIER_MAX_STALLS times: it is dead-lettered, not classified
// again, so one document that hangs or kills a replica cannot keep doing it.
var ErrStalled = errors.New("claim expired without a commit too many times (CLASSIFIER_MAX_STALLS)")

// recordLag records how long a polled document waited: from when it became
// pending (contentindex.RawDocument.WaitingSince), so a reprocess of old
// documents is not lag. The dead-letter retry worker's documents were not
// polled, and a stalled one is not classified: neither is counted.
func (b *BatchProcessor) recordLag(ctx context.Context, item *domain.RawContent) {
	since := item.WaitingSince()
	if item.FromDLQ || item.Stalled || since.IsZero() {
		return
	}
	b.metrics.PollerLag.Record(ctx, time.Since(since).Seconds())
}

// process classifies one document. A panic is recovered into a RULE_PANIC
// result, so a poison document reaches the dead-letter queue and the worker
// lives on.
func (b *BatchProcessor) process(ctx context.Context, workerID int, item *domain.RawContent) (res Result) {
	// A span of the document's own trace (poller.traceDocuments).
	ctx = tracectx.ContextWithTraceparent(ctx, item.Traceparent)
	ctx, span := b.tracer.Start(ctx, "classifier.classify", trace.WithAttributes(
		attribute.String("content_id", item.ID), attribute.String("source", item.SourceName)))
	defer span.End()
	start := time.Now()
	b.recordLag(ctx, item)
	defer func() {
		if r := recover(); r != nil {
			b.logger.ErrorContext(ctx, "classification panicked", "worker_id", workerID, "content_id", item.ID,
				"source", item.SourceName, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res = Result{Raw: item, Err: fmt.Errorf("classification panicked: %v", r), Code: domain.ErrorCodeRulePanic}
		}
		b.metrics.ProcessingDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attribute.String("source", item.SourceName)))
	}()
	if item.Stalled {
		// Dead-lettered without admission: under its index's source, like
		// every refused document.
		admission.OwnSource(item)
		return Result{Raw: item, Err: ErrStalled, Code: domain.ErrorCodeStalled}
	}
	doc, err := b.pipeline.Classify(item)
	if err != nil {
		code := domain.ErrorCodeQualityError
		if errors.Is(err, pipeline.ErrUnprocessable) {
			code = domain.ErrorCodeValidation
		}
		b.logger.DebugContext(ctx, "classification failed", "worker_id", workerID, "content_id", item.ID, "source", item.SourceName, "error", err)
		return Result{Raw: item, Err: err, Code: code}
	}
	return Result{Raw: item, Doc: doc}
}
