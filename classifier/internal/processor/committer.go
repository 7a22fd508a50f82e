package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// Defaults of CommitterConfig.
const (
	CommitBatchDefault  = 200
	CommitLingerDefault = 50 * time.Millisecond
)

// Stores are the committer's outputs. DeadLetters and Reputation may be nil
// (the DLQ disabled by CLASSIFIER_DLQ_ENABLED=false; reputation off).
type Stores struct {
	Content     *storage.ContentStore
	History     *storage.HistoryRepository
	Outbox      *storage.OutboxWriter
	DeadLetters *deadletter.Repository
	Reputation  *reputation.Repository
}

// CommitterConfig sizes the commit batches.
type CommitterConfig struct {
	// Batch is the most results committed together. Defaults to CommitBatchDefault.
	Batch int
	// Linger is how long the first result of a batch waits for company.
	// Defaults to CommitLingerDefault.
	Linger time.Duration
}

// Committer receives results from the workers and commits them in batches.
// Every write before the status flip is idempotent, so a crash anywhere
// before it only means the batch comes back after the claim lease.
type Committer struct {
	cfg     CommitterConfig
	stores  Stores
	metrics *telemetry.Metrics
	tracer  trace.Tracer
	logger  *slog.Logger
	in      chan Result

	mu      sync.Mutex
	started bool
	closed  bool
	done    chan struct{}
}

// NewCommitter returns a committer; its Input is what the workers write to.
func NewCommitter(cfg CommitterConfig, stores Stores, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) *Committer {
	if cfg.Batch <= 0 {
		cfg.Batch = CommitBatchDefault
	}
	if cfg.Linger <= 0 {
		cfg.Linger = CommitLingerDefault
	}
	return &Committer{cfg: cfg, stores: stores, metrics: metrics, tracer: tracer,
		logger: logger.With("component", "committer"), in: make(chan Result, cfg.Batch*2), done: make(chan struct{})}
}

// Input is the channel results are sent to. It is closed by Stop, which must
// come after every sender (the batch processor) has stopped.
func (c *Committer) Input() chan<- Result { return c.in }

// Start launches the commit loop.
func (c *Committer) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return nil
	}
	c.started = true
	go c.run(context.WithoutCancel(ctx))
	return nil
}

// Stop commits what is still in flight and ends the loop, bounded by ctx.
func (c *Committer) Stop(ctx context.Context) error {
	c.mu.Lock()
	if !c.started || c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.in)
	c.mu.Unlock()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop committer: %w", ctx.Err())
	}
}

func (c *Committer) run(ctx context.Context) {
	defer close(c.done)
	batch := make([]Result, 0, c.cfg.Batch)
	var linger <-chan time.Time
	for {
		select {
		case r, ok := <-c.in:
			if !ok {
				c.Commit(ctx, batch)
				return
			}
			batch = append(batch, r)
			if len(batch) == 1 {
				linger = time.After(c.cfg.Linger)
			}
			if len(batch) < c.cfg.Batch {
				continue
			}
		case <-linger:
		}
		c.Commit(ctx, batch)
		batch = batch[:0]
		linger = nil
	}
}

// Commit writes one batch of results. Successes are written to
// Elasticsearch, then history and outbox rows for those written; only then
// are they flipped to classified. Failures go to the dead-letter queue and
// are flipped to failed with their reason. A document whose writes fail goes
// the failure way; one whose dead-letter write fails stays claimed, and the
// claim lease returns it to the poll: nothing is lost.
func (c *Committer) Commit(ctx context.Context, results []Result) {
	if len(results) == 0 {
		return
	}
	ctx, span := c.tracer.Start(ctx, "classifier.commit", trace.WithAttributes(attribute.Int("batch_size", len(results))))
	defer span.End()

	var ok []Result
	var failed []Result
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, r)
		} else {
			ok = append(ok, r)
		}
	}
	written, writeFailed := c.write(ctx, ok)
	failed = append(failed, writeFailed...)
	parked := c.deadLetter(ctx, failed)

	changes := make([]storage.StatusChange, 0, len(written)+len(parked))
	for _, r := range written {
		changes = append(changes, storage.StatusChange{Raw: r.Raw, Status: contentindex.StatusClassified, Doc: r.Doc})
	}
	for _, r := range parked {
		changes = append(changes, storage.StatusChange{Raw: r.Raw, Status: contentindex.StatusFailed, Reason: string(r.Code) + ": " + r.Err.Error()})
	}
	flipped := c.flip(ctx, changes)
	c.account(ctx, flipped)
}

// write stores successes: Elasticsearch bulk, then history and outbox rows
// in one statement each. It returns the results fully written and those that
// failed, with their error code.
func (c *Committer) write(ctx context.Context, ok []Result) (written, failed []Result) {
	if len(ok) == 0 {
		return nil, nil
	}
	docs := make([]*domain.ClassifiedContent, len(ok))
	for i, r := range ok {
		docs[i] = r.Doc
	}
	items, err := c.stores.Content.WriteClassified(ctx, docs)
	if err != nil {
		return nil, withError(ok, esErrorCode(err), err)
	}
	for i, item := range items {
		if item.Err != nil {
			failed = append(failed, Result{Raw: ok[i].Raw, Err: item.Err, Code: esErrorCode(item.Err)})
			continue
		}
		written = append(written, ok[i])
	}
	docs = docs[:0]
	for _, r := range written {
		docs = append(docs, r.Doc)
	}
	if err := c.stores.History.InsertBatch(ctx, docs); err != nil {
		return nil, append(failed, withError(written, domain.ErrorCodeDB, err)...)
	}
	if err := c.stores.Outbox.WriteBatch(ctx, docs); err != nil {
		return nil, append(failed, withError(written, domain.ErrorCodeDB, err)...)
	}
	return written, failed
}

// deadLetter records failures in the DLQ and returns those that may now be
// flipped to failed. Without a DLQ only validation failures are flipped (with
// their reason); other failures stay claimed for the lease to retry.
func (c *Committer) deadLetter(ctx context.Context, failed []Result) (parked []Result) {
	if len(failed) == 0 {
		return nil
	}
	for _, r := range failed {
		c.metrics.DocumentsFailed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", r.Raw.SourceName), attribute.String("error_code", string(r.Code))))
		level := slog.LevelError
		if r.Code == domain.ErrorCodeValidation {
			level = slog.LevelWarn
		}
		c.logger.Log(ctx, level, "document not classified", "content_id", r.Raw.ID, "source", r.Raw.SourceName,
			"index", r.Raw.Index, "error_code", r.Code, "error", r.Err)
	}
	if c.stores.DeadLetters == nil {
		for _, r := range failed {
			if r.Code == domain.ErrorCodeValidation {
				parked = append(parked, r)
			}
		}
		return parked
	}
	entries := make([]domain.Failure, len(failed))
	for i, r := range failed {
		entries[i] = domain.Failure{ContentID: r.Raw.ID, Source: r.Raw.SourceName, Index: r.Raw.Index, Code: r.Code, Message: r.Err.Error()}
	}
	recorded, err := c.stores.DeadLetters.Record(ctx, entries)
	if err != nil {
		c.logger.ErrorContext(ctx, "dead-letter write failed; documents stay claimed and return after the lease",
			"documents", len(failed), "error", err)
		return nil
	}
	for _, rec := range recorded {
		if rec.Inserted {
			c.metrics.DLQEnqueued.Add(ctx, 1)
		}
		if rec.Exhausted {
			c.metrics.DLQExhausted.Add(ctx, 1)
			c.logger.ErrorContext(ctx, "dead-letter entry exhausted its retries", "content_id", rec.ContentID)
		}
	}
	return failed
}

// flip performs the status changes and returns those that took effect.
func (c *Committer) flip(ctx context.Context, changes []storage.StatusChange) []storage.StatusChange {
	if len(changes) == 0 {
		return nil
	}
	items, err := c.stores.Content.FlipStatus(ctx, changes)
	if err != nil {
		c.logger.ErrorContext(ctx, "status flip failed; documents stay claimed and return after the lease",
			"documents", len(changes), "error", err)
		c.metrics.DocumentsFailed.Add(ctx, int64(len(changes)), metric.WithAttributes(attribute.String("error_code", "STATUS_FLIP")))
		return nil
	}
	flipped := changes[:0:0]
	for i, item := range items {
		if item.Err != nil {
			// 409: the claim was taken over after the lease; the new owner
			// finishes the document. Anything else returns after the lease.
			c.logger.WarnContext(ctx, "status flip rejected", "content_id", changes[i].Raw.ID, "source", changes[i].Raw.SourceName,
				"taken_over", esclient.IsConflict(item.Err), "error", item.Err)
			continue
		}
		flipped = append(flipped, changes[i])
	}
	return flipped
}

// account records what a committed batch means: metrics, resolved
// dead-letter entries, and source statistics.
func (c *Committer) account(ctx context.Context, flipped []storage.StatusChange) {
	var resolved []string
	retried := 0
	deltas := map[string]reputation.Delta{}
	for _, ch := range flipped {
		src := ch.Raw.SourceName
		d := deltas[src]
		d.Total++
		if ch.Status == contentindex.StatusClassified {
			resolved = append(resolved, ch.Raw.ID)
			if ch.Raw.FromDLQ {
				retried++
			}
			c.metrics.DocumentsProcessed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", src)))
			if !ch.Raw.CrawledAt.IsZero() {
				c.metrics.ClassificationLag.Record(ctx, time.Since(ch.Raw.CrawledAt).Seconds())
			}
			d.Classified++
			if doc := ch.Doc; doc != nil {
				d.QualitySum += int64(doc.QualityScore)
				if doc.IsCrimeRelated {
					d.Crime++
				}
			}
		} else {
			d.Failed++
		}
		deltas[src] = d
	}
	if c.stores.DeadLetters != nil && len(resolved) > 0 {
		n, err := c.stores.DeadLetters.Resolve(ctx, resolved)
		if err != nil {
			c.logger.ErrorContext(ctx, "resolving dead-letter entries failed; they will be retried and resolve then", "error", err)
		} else if n > 0 {
			c.metrics.DLQProcessed.Add(ctx, n)
		}
	}
	if retried > 0 {
		c.metrics.DocumentsRetried.Add(ctx, int64(retried))
	}
	if c.stores.Reputation != nil {
		if err := c.stores.Reputation.Add(ctx, deltas); err != nil {
			c.logger.ErrorContext(ctx, "source reputation update failed", "sources", len(deltas), "error", err)
		}
	}
}

func withError(rs []Result, code domain.ErrorCode, err error) []Result {
	out := make([]Result, len(rs))
	for i, r := range rs {
		out[i] = Result{Raw: r.Raw, Err: err, Code: code}
	}
	return out
}

// esErrorCode maps an Elasticsearch failure to a DLQ error code: time-outs
// and unavailability retry; a document the index rejects (a 4xx other than
// 408/429) will be rejected again.
func esErrorCode(err error) domain.ErrorCode {
	var re *esclient.ResponseError
	if errors.As(err, &re) {
		switch {
		case re.Status == http.StatusRequestTimeout || re.Status == http.StatusGatewayTimeout:
			return domain.ErrorCodeESTimeout
		case re.Status == http.StatusTooManyRequests || re.Status >= 500:
			return domain.ErrorCodeESUnavailable
		case re.Status >= 400:
			return domain.ErrorCodeValidation
		}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return domain.ErrorCodeESTimeout
	}
	return domain.ErrorCodeESUnavailable
}
