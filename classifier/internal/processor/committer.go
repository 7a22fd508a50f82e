package processor

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/fault"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of CommitterConfig.
const (
	CommitBatchDefault   = 200
	CommitLingerDefault  = 50 * time.Millisecond
	CommitWorkersDefault = 4
)

// Stores are the committer's outputs. DeadLetters and Reputation may be nil
// (the DLQ disabled by CLASSIFIER_DLQ_ENABLED=false; reputation off).
type Stores struct {
	// Content writes the classified documents.
	Content *storage.ContentStore
	// Raw flips the status of the raw documents (the commit point).
	Raw         *rawindex.Store
	History     *storage.HistoryRepository
	Outbox      *storage.OutboxWriter
	DeadLetters *deadletter.Repository
	Reputation  *reputation.Repository
	// Claims, when set, is the registry of claims in flight: the committer
	// takes each document out of it before its status flip, so the
	// heartbeat stops renewing it.
	Claims *claim.Registry
	// Leases, when set, is the claim table: before writing anything of a
	// batch the committer renews its claims there (the one ownership
	// check), and after the flip it finishes them, or releases those whose
	// flip found the document changed.
	Leases *lease.Store
	// Hygiene, when set, decides which documents are duplicates and which
	// outcomes are news (their version); without it every document is
	// published as version 1.
	Hygiene *Hygiene
}

// Breakers guard the committer's dependencies. A nil breaker is replaced by
// a private one, so a committer always pauses on an outage.
type Breakers struct {
	// Elasticsearch guards the classified writes and the status flips.
	Elasticsearch *breaker.Breaker
	// Postgres guards the classifier's database (history, dead letters).
	Postgres *breaker.Breaker
	// Outbox guards the publisher's database (the outbox insert).
	Outbox *breaker.Breaker
}

// CommitterConfig sizes the commit batches.
type CommitterConfig struct {
	// Batch is the most results committed together. Defaults to CommitBatchDefault.
	Batch int
	// Linger is how long the first result of a batch waits for company.
	// Defaults to CommitLingerDefault.
	Linger time.Duration
	// Workers is the number of batches committed at once. A commit is a
	// chain of round trips (Elasticsearch, the two databases, Elasticsearch
	// again); one at a time, each dependency idles while the others work
	// and the committer, not the dependencies, bounds the throughput.
	// Batches hold distinct documents, so they commit independently.
	// Defaults to CommitWorkersDefault.
	Workers int
}

// Committer receives results from the workers and commits them in batches.
// Every write before the status flip is idempotent, so a crash anywhere
// before it only means the batch comes back after the claim lease.
//
// A fault stays with what caused it (package fault), and an outage is
// proved, not assumed: only an availability error, or an error that does
// not tell and a database that fails its SELECT 1, opens the dependency's
// breaker; the committer then holds the batch and retries it when the
// dependency answers again, charging no document a retry. Any other error
// of a record-keeping write (hygiene, history, outbox, published outcomes,
// dead letters) is the statement's: the batch is split down to the row,
// only that row is dead-lettered with its own error, and the rest is
// committed (isolate).
type Committer struct {
	cfg      CommitterConfig
	stores   Stores
	breakers Breakers
	metrics  *telemetry.Metrics
	tracer   trace.Tracer
	logger   *slog.Logger
	in       chan Result
	// urgent is the input of urgent documents' results (UrgentOutput): a
	// batching loop and a commit worker of their own, so fresh news is not
	// committed behind a queue of backlog.
	urgent chan Result

	base lifecycle.Base // owns the batching loop and the commit workers
}

// NewCommitter returns a committer; its Output is what the workers write to.
func NewCommitter(cfg CommitterConfig, stores Stores, breakers Breakers, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) *Committer {
	if cfg.Batch <= 0 {
		cfg.Batch = CommitBatchDefault
	}
	if cfg.Linger <= 0 {
		cfg.Linger = CommitLingerDefault
	}
	if cfg.Workers <= 0 {
		cfg.Workers = CommitWorkersDefault
	}
	for _, b := range []struct {
		p    **breaker.Breaker
		name string
	}{{&breakers.Elasticsearch, "elasticsearch"}, {&breakers.Postgres, "postgres"}, {&breakers.Outbox, "outbox_postgres"}} {
		if *b.p == nil {
			*b.p = breaker.MustNew(breaker.Config{Name: b.name})
		}
	}
	return &Committer{cfg: cfg, stores: stores, breakers: breakers, metrics: metrics, tracer: tracer,
		logger: logger.With("component", "committer"), in: make(chan Result, cfg.Batch*2), urgent: make(chan Result, cfg.Batch)}
}

// Output is where the workers send their results. Its Done channel closes
// when the committer takes no more: a worker still running then (a stop
// past its deadline) drops its result, and the document's claim is
// released or returns after the lease.
func (c *Committer) Output() Output { return Output{C: c.in, Done: c.base.Stopped()} }

// UrgentOutput is where the workers of urgent documents send their
// results: committed by a worker of its own, never behind the backlog.
func (c *Committer) UrgentOutput() Output { return Output{C: c.urgent, Done: c.base.Stopped()} }

// Start launches the batching loop and the commit workers. Starting a
// started committer does nothing; a stopped one does not start again.
func (c *Committer) Start(ctx context.Context) error {
	err := c.base.StartFunc(ctx, func(run context.Context) error {
		// Stop cancels run; the commits themselves go on, on a context
		// Stop does not cancel, so what has arrived is committed.
		work := context.WithoutCancel(run)
		batches := make(chan []Result)
		for range c.cfg.Workers {
			c.base.Go(func() {
				for batch := range batches {
					c.commit(work, run.Done(), batch)
				}
			})
		}
		c.base.Go(func() { c.gather(run, c.in, batches) })
		urgent := make(chan []Result)
		c.base.Go(func() {
			for batch := range urgent {
				c.commit(work, run.Done(), batch)
			}
		})
		c.base.Go(func() { c.gather(run, c.urgent, urgent) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("start committer: %w", err)
	}
	return nil
}

// Stop commits what has arrived and ends the loop, bounded by ctx. It never
// closes the input, so a worker that is still running cannot panic on it.
// It is idempotent and safe before Start.
func (c *Committer) Stop(ctx context.Context) error {
	if err := c.base.Stop(ctx); err != nil {
		return fmt.Errorf("stop committer: %w", err)
	}
	return nil
}

// gather cuts the results into batches of at most Batch, or what came
// within Linger of a batch's first result, and hands each to a commit
// worker. While every worker is busy the batch in hand keeps growing up to
// Batch: each bulk request costs Elasticsearch a translog fsync per shard,
// so under load fewer, fuller batches commit more documents. Once run is
// cancelled it takes what the workers have already sent, hands it on, and
// closes batches.
func (c *Committer) gather(run context.Context, in <-chan Result, batches chan<- []Result) {
	defer close(batches)
	batch := make([]Result, 0, c.cfg.Batch)
	var linger <-chan time.Time
	for {
		select {
		case r := <-in:
			batch = append(batch, r)
			if len(batch) == 1 {
				linger = time.After(c.cfg.Linger)
			}
			if len(batch) < c.cfg.Batch {
				continue
			}
		case <-linger:
		case <-run.Done():
			for {
				select {
				case r := <-in:
					batch = append(batch, r)
					if len(batch) >= c.cfg.Batch {
						batches <- batch
						batch = make([]Result, 0, c.cfg.Batch)
					}
					continue
				default:
				}
				break
			}
			if len(batch) > 0 {
				batches <- batch
			}
			return
		}
		batch = c.handOver(run, in, batches, batch)
		linger = nil
	}
}

// handOver gives batch to the first free commit worker, adding the results
// that arrive meanwhile while it has room, and returns a new, empty batch.
func (c *Committer) handOver(run context.Context, in <-chan Result, batches chan<- []Result, batch []Result) []Result {
	for {
		more := in
		if len(batch) >= c.cfg.Batch {
			more = nil // full: wait for a worker only
		}
		select {
		case batches <- batch:
			return make([]Result, 0, c.cfg.Batch)
		case r := <-more:
			batch = append(batch, r)
		case <-run.Done():
			batches <- batch // the workers drain what is handed over
			return make([]Result, 0, c.cfg.Batch)
		}
	}
}

// Commit writes one batch of results. Successes are written to
// Elasticsearch, then history and outbox rows for those written; only then
// are they flipped to classified. Failures go to the dead-letter queue and
// are flipped to failed with their reason. Each step that meets an outage
// waits for the dependency and is retried, until ctx ends: then the batch
// is left claimed (the heartbeat releases it at stop, or the lease returns
// it). The requests themselves are not bound by ctx.
func (c *Committer) Commit(ctx context.Context, results []Result) {
	c.commit(context.WithoutCancel(ctx), ctx.Done(), results)
}

// commit is Commit with its requests on ctx, held batches given up when
// stop closes.
func (c *Committer) commit(ctx context.Context, stop <-chan struct{}, results []Result) {
	if len(results) == 0 {
		return
	}
	ctx, span := c.tracer.Start(ctx, "classifier.commit", trace.WithAttributes(attribute.Int("batch_size", len(results))))
	defer span.End()
	if results = c.dropTakenOver(ctx, results); len(results) == 0 {
		return
	}

	var ok, failed []Result
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, r)
		} else {
			ok = append(ok, r)
		}
	}
	var written []Result
	for pending := ok; len(pending) > 0; {
		w, f, retry, dep := c.write(ctx, pending)
		written, failed = append(written, w...), append(failed, f...)
		if pending = retry; len(pending) > 0 && !c.await(ctx, stop, dep, len(pending)) {
			return
		}
	}
	c.report(ctx, failed)
	var parked []Result
	for pending := failed; len(pending) > 0; {
		p, retry, dep := c.deadLetter(ctx, pending)
		parked = append(parked, p...)
		if pending = retry; len(pending) > 0 && !c.await(ctx, stop, dep, len(pending)) {
			return
		}
	}

	written, orphans := heldBehindFailed(written, failed)
	c.requeueOrphans(ctx, orphans)

	changes := make([]rawindex.Change, 0, len(written)+len(parked))
	for _, r := range written {
		changes = append(changes, rawindex.Change{Raw: r.Raw, Status: contentindex.StatusClassified, Doc: r.Doc})
	}
	for _, r := range parked {
		changes = append(changes, rawindex.Change{Raw: r.Raw, Status: contentindex.StatusFailed, Reason: string(r.Code) + ": " + r.Err.Error()})
	}
	// Every document of the batch is finished here, flipped or not: stop
	// renewing its claim. One left claimed returns after the lease.
	for _, r := range results {
		c.stores.Claims.Take(r.Raw)
	}
	var flipped []rawindex.Change
	for pending := changes; len(pending) > 0; {
		f, retry := c.flip(ctx, pending)
		flipped = append(flipped, f...)
		if pending = retry; len(pending) > 0 && !c.await(ctx, stop, c.breakers.Elasticsearch, len(pending)) {
			break
		}
	}
	c.finish(ctx, flipped)
	c.account(ctx, flipped)
}

// finish marks the claims of the changed documents done (package lease).
func (c *Committer) finish(ctx context.Context, flipped []rawindex.Change) {
	if c.stores.Leases == nil || len(flipped) == 0 {
		return
	}
	raws := make([]*domain.RawContent, len(flipped))
	for i, ch := range flipped {
		raws[i] = ch.Raw
	}
	if err := c.stores.Leases.Finish(ctx, lease.ClaimIDs(raws)); err != nil {
		c.logger.WarnContext(ctx, "finished claims not marked; they expire after the lease", "documents", len(raws), "error", err)
	}
}

// await waits until dep may be tried again: a short pause, then until its
// breaker lets a call through (the retry is the probe). It returns false
// once stop closes (the committer is stopping).
func (c *Committer) await(ctx context.Context, stop <-chan struct{}, dep *breaker.Breaker, held int) bool {
	c.logger.WarnContext(ctx, "commit paused: dependency unavailable; the batch is held, no retry is charged",
		"dependency", dep.Name(), "documents", held, "breaker_state", dep.State().String())
	pause := 100 * time.Millisecond
	for {
		t := time.NewTimer(pause)
		select {
		case <-stop:
			t.Stop()
			c.logger.WarnContext(ctx, "stopping with a held batch: its claims are released or return after the lease",
				"dependency", dep.Name(), "documents", held)
			return false
		case <-t.C:
		}
		if ok, _ := dep.Allow(); ok {
			return true
		}
		pause = min(2*pause, time.Second)
	}
}

// write stores successes: the hygiene decision, the Elasticsearch bulk,
// then history and outbox rows and the published outcomes, one statement
// each when they can. It returns the results fully written; those that
// failed, with their error code; and those to write again once dep, a
// dependency that failed as a whole, answers again.
func (c *Committer) write(ctx context.Context, ok []Result) (written, failed, retry []Result, dep *breaker.Breaker) {
	pg, ob := c.breakers.Postgres, c.breakers.Outbox
	decided, failed, held := c.isolate(ctx, ok, c.pgStatement("decide", func(ctx context.Context, docs []*domain.ClassifiedContent) error {
		return c.stores.Hygiene.decide(ctx, docs)
	}))
	if held {
		return nil, nil, ok, pg
	}
	if len(decided) == 0 {
		return nil, failed, nil, nil
	}
	docs := docsOf(decided)
	es := c.breakers.Elasticsearch
	items, err := c.stores.Content.WriteClassified(ctx, docs)
	if err != nil {
		switch kind := fault.ElasticsearchProved(ctx, err, c.stores.Content.Ping); kind {
		case fault.Dependency:
			es.Failure(err)
			return nil, failed, decided, es
		default:
			return nil, append(failed, withError(decided, faultCode(kind, true, err), err)...), nil, nil
		}
	}
	es.Success()
	var esWritten []Result
	for i, item := range items {
		if item.Err == nil {
			esWritten = append(esWritten, decided[i])
			continue
		}
		switch kind := fault.ElasticsearchItem(item.Status, item.Err.Error()); kind {
		case fault.Dependency:
			es.Failure(item.Err)
			retry, dep = append(retry, decided[i]), es
		default:
			failed = append(failed, Result{Raw: decided[i].Raw, Err: item.Err, Code: faultCode(kind, true, item.Err)})
		}
	}
	if len(esWritten) == 0 {
		return nil, failed, retry, dep
	}
	stored, f, held := c.isolate(ctx, esWritten, c.pgStatement("history", c.stores.History.InsertBatch))
	if held {
		return nil, failed, append(retry, esWritten...), pg
	}
	failed = append(failed, f...)
	// Only news goes to the outbox: a duplicate held back or an unchanged
	// outcome is written and flipped like the rest, without a row.
	var news, quiet []Result
	for _, r := range stored {
		if r.Doc.Publish {
			news = append(news, r)
		} else {
			quiet = append(quiet, r)
		}
	}
	news, quiet = c.dropSuperseded(ctx, news, quiet)
	news, f, held = c.isolate(ctx, news, statement{name: "outbox", breaker: ob, probe: c.stores.Outbox.Ping, run: rowsOf(c.stores.Outbox.WriteBatch)})
	if held {
		return nil, failed, append(retry, stored...), ob
	}
	failed = append(failed, f...)
	// The rows are in the outbox; a row whose outcome cannot be recorded
	// fails with its error, and written again on its retry it is absorbed
	// (same version) and the record is tried again.
	news, f, held = c.isolate(ctx, news, c.pgStatement("republish", func(ctx context.Context, docs []*domain.ClassifiedContent) error {
		return c.stores.Hygiene.record(ctx, docs)
	}))
	if held {
		return nil, failed, append(retry, stored...), pg
	}
	failed = append(failed, f...)
	written = append(news, quiet...)
	c.countHygiene(ctx, written)
	return written, failed, retry, dep
}

// statement is one Postgres write of a batch's results, made by the
// committer under one policy (isolate).
type statement struct {
	// name says what is written, for logs.
	name string
	// breaker guards the database written to.
	breaker *breaker.Breaker
	// probe proves an outage of that database when an error does not tell.
	probe fault.Probe
	// run writes the results in one statement (or one round of them).
	run func(ctx context.Context, rs []Result) error
	// fail is what becomes of a result that run refuses alone with err.
	// Defaults to the result failing with err and rowCode(err).
	fail func(r Result, err error) Result
}

// pgStatement is a write of documents to the classifier's database.
func (c *Committer) pgStatement(name string, write func(context.Context, []*domain.ClassifiedContent) error) statement {
	return statement{name: name, breaker: c.breakers.Postgres, probe: c.stores.History.Ping, run: rowsOf(write)}
}

// rowsOf adapts a write of documents to a write of results.
func rowsOf(write func(context.Context, []*domain.ClassifiedContent) error) func(context.Context, []Result) error {
	return func(ctx context.Context, rs []Result) error { return write(ctx, docsOf(rs)) }
}

func docsOf(rs []Result) []*domain.ClassifiedContent {
	docs := make([]*domain.ClassifiedContent, len(rs))
	for i, r := range rs {
		docs[i] = r.Doc
	}
	return docs
}

// isolate writes rs with st, and tells st's breaker how the database
// answered. A statement error is an outage only when the database says so
// (an availability error) or, when the error does not tell, fails its probe
// (fault.PostgresProved): then held is true, the breaker counts a failure and the
// caller holds the batch, charging no retry. Any other error is the
// statement's, whatever its class (a row touched twice, invalid data, a
// constraint, a trigger's exception, a deadlock): the batch is split in
// halves and each half written again, down to the row at fault, which
// alone fails with its own error (st.fail); the other rows are written.
func (c *Committer) isolate(ctx context.Context, rs []Result, st statement) (ok, failed []Result, held bool) {
	if len(rs) == 0 {
		return nil, nil, false
	}
	ok, failed, err := c.bisect(ctx, rs, st)
	if err != nil {
		st.breaker.Failure(err)
		return nil, nil, true
	}
	st.breaker.Success()
	if len(failed) > 0 {
		c.logger.WarnContext(ctx, "rows refused by their statement are set aside; the rest of the batch is written",
			"write", st.name, "refused", len(failed), "written", len(ok))
	}
	return ok, failed, false
}

// bisect is isolate's split; err is the outage that stops it.
func (c *Committer) bisect(ctx context.Context, rs []Result, st statement) (ok, failed []Result, err error) {
	werr := st.run(ctx, rs)
	if werr == nil {
		return rs, nil, nil
	}
	if fault.PostgresProved(ctx, werr, st.probe) == fault.Dependency {
		return nil, nil, werr
	}
	if len(rs) == 1 {
		if st.fail != nil {
			return nil, []Result{st.fail(rs[0], werr)}, nil
		}
		return nil, withError(rs, rowCode(werr), werr), nil
	}
	half := len(rs) / 2
	okA, failedA, err := c.bisect(ctx, rs[:half], st)
	if err != nil {
		return nil, nil, err
	}
	okB, failedB, err := c.bisect(ctx, rs[half:], st)
	if err != nil {
		return nil, nil, err
	}
	return append(okA, okB...), append(failedA, failedB...), nil
}

// report counts and logs the batch's failures, once each.
func (c *Committer) report(ctx context.Context, failed []Result) {
	for _, r := range failed {
		c.metrics.DocumentsFailed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", r.Raw.SourceName), attribute.String("error_code", string(r.Code))))
		level := slog.LevelError
		if r.Code == domain.ErrorCodeValidation {
			level = slog.LevelWarn
		}
		c.logger.Log(ctx, level, "document not classified", "content_id", r.Raw.ID, "source", r.Raw.SourceName,
			"index", r.Raw.Index, "error_code", r.Code, "error", r.Err)
	}
}

// deadLetter records failures in the DLQ and returns those that may now be
// flipped to failed, and those to record again once dep answers. Without a
// DLQ only validation failures are flipped (with their reason); other
// failures stay claimed for the lease to retry.
//
// The record follows the committer's one rule (isolate): an outage of the
// database holds the failures; any other error is bisected down to the
// entry, and an entry the queue refuses even alone is flipped to failed
// with its reason and the queue's refusal (logged, and counted in
// classifier_dlq_write_failures_total), visible and re-queueable in the
// raw index instead of held for ever.
func (c *Committer) deadLetter(ctx context.Context, failed []Result) (parked, retry []Result, dep *breaker.Breaker) {
	if c.stores.DeadLetters == nil {
		for _, r := range failed {
			if r.Code == domain.ErrorCodeValidation {
				parked = append(parked, r)
			}
		}
		return parked, nil, nil
	}
	var recorded []deadletter.Recorded
	record := statement{name: "dead_letter", breaker: c.breakers.Postgres, probe: c.stores.History.Ping,
		run: func(ctx context.Context, rs []Result) error {
			entries := make([]domain.DeadLetterEntry, len(rs))
			for i, r := range rs {
				entries[i] = domain.DeadLetterEntry{ContentID: r.Raw.ID, SourceName: r.Raw.SourceName, IndexName: r.Raw.Index, ErrorCode: r.Code, ErrorMessage: r.Err.Error()}
			}
			recs, err := c.stores.DeadLetters.EnqueueBatch(ctx, entries)
			recorded = append(recorded, recs...)
			return err
		},
		fail: func(r Result, err error) Result {
			c.metrics.DLQWriteFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("source", r.Raw.SourceName), attribute.String("error_code", string(r.Code))))
			c.logger.ErrorContext(ctx, "dead-letter queue refused the document; it is flipped to failed with its reason instead",
				"content_id", r.Raw.ID, "source", r.Raw.SourceName, "index", r.Raw.Index, "error_code", r.Code, "error", r.Err, "dlq_error", err)
			r.Err = fmt.Errorf("%w (not in the dead-letter queue: %v)", r.Err, err)
			return r
		},
	}
	ok, refused, held := c.isolate(ctx, failed, record)
	if held {
		return nil, failed, c.breakers.Postgres
	}
	for _, rec := range recorded {
		if rec.Inserted {
			c.metrics.DLQEnqueued.Add(ctx, 1)
		}
		if rec.Exhausted {
			c.metrics.DLQExhausted.Add(ctx, 1)
			c.logger.ErrorContext(ctx, "dead-letter entry exhausted its retries", "content_id", rec.ContentID, "index", rec.Index)
		}
	}
	return append(ok, refused...), nil, nil
}

// flip performs the status changes and returns those that took effect, and
// those to try again once Elasticsearch answers. A change refused as a
// conflict means the document changed since the search that found it (a
// crawler rewrote it, or another replica flipped it): its claim is
// finished at the version it was made at, so the document is claimed again
// as soon as a search returns it as it is now, never at the version this
// attempt saw; nothing more of this attempt is written. A change refused
// by a write block on its index (set after the document was claimed) has
// its claim released: the document is no fault of its own and counts no
// stall, and the poller takes it again once the block is lifted.
func (c *Committer) flip(ctx context.Context, changes []rawindex.Change) (flipped, retry []rawindex.Change) {
	flipped, retry, conflicts, blocked := c.flipOnce(ctx, c.dropDeletedIndices(ctx, changes))
	if len(conflicts) > 0 {
		for _, ch := range conflicts {
			c.logger.WarnContext(ctx, "status flip refused: the document changed since it was found; it is claimed again at its new version",
				"content_id", ch.Raw.ID, "source", ch.Raw.SourceName, "index", ch.Raw.Index)
		}
		c.finish(ctx, conflicts)
	}
	c.requeueBlocked(ctx, blocked)
	return flipped, retry
}

// dropDeletedIndices takes out the changes whose raw index no longer
// exists (an operator deleted it after its documents were claimed) and
// releases their claims. Elasticsearch creates a missing index on an
// update, so their flips would bring the deleted index back, empty. Their
// classified documents and outbox rows are written already: nothing is
// lost with a status that has no document left to hold it. An index
// deleted between this check and the flip is still created again; the
// check makes that window the time of one request, from the time it took
// to classify the batch. An index whose existence cannot be told is
// flipped as before: the flip's own answer says what happened.
func (c *Committer) dropDeletedIndices(ctx context.Context, changes []rawindex.Change) []rawindex.Change {
	exists := map[string]bool{}
	for _, ch := range changes {
		if _, asked := exists[ch.Raw.Index]; !asked {
			ok, err := c.stores.Raw.Exists(ctx, ch.Raw.Index)
			exists[ch.Raw.Index] = ok || err != nil
		}
	}
	kept := make([]rawindex.Change, 0, len(changes))
	var released []*domain.RawContent
	gone := map[string]int{} // documents per deleted index
	for _, ch := range changes {
		if !exists[ch.Raw.Index] {
			gone[ch.Raw.Index]++
			released = append(released, ch.Raw)
			c.metrics.DocumentsRequeued.Add(ctx, 1, metric.WithAttributes(
				attribute.String("source", ch.Raw.SourceName), attribute.String("reason", requeueIndexDeleted)))
			continue
		}
		kept = append(kept, ch)
	}
	for index, n := range gone {
		c.logger.WarnContext(ctx, "raw index deleted since its documents were claimed; their status is not written, so the index is not created again",
			"index", index, "documents", n, "reason", requeueIndexDeleted)
	}
	c.releaseClaims(ctx, released, "index-deleted")
	return kept
}

// requeueBlocked counts and logs the changes a write block refused and
// releases their claims, so that they count no stall.
func (c *Committer) requeueBlocked(ctx context.Context, blocked []blockedChange) {
	if len(blocked) == 0 {
		return
	}
	raws := make([]*domain.RawContent, len(blocked))
	for i, b := range blocked {
		raws[i] = b.Raw
		c.metrics.DocumentsRequeued.Add(ctx, 1, metric.WithAttributes(
			attribute.String("source", b.Raw.SourceName), attribute.String("reason", requeueWriteBlocked)))
		c.logger.WarnContext(ctx, "status flip refused by a write block on the raw index; claim released, the document is taken again once the block is lifted",
			"content_id", b.Raw.ID, "source", b.Raw.SourceName, "index", b.Raw.Index, "reason", requeueWriteBlocked, "error", b.err)
	}
	c.releaseClaims(ctx, raws, "write-blocked")
}

// releaseClaims releases the claims of raws, so that their documents are
// claimable again at once, with no stall counted. A release that fails
// leaves them to their lease.
func (c *Committer) releaseClaims(ctx context.Context, raws []*domain.RawContent, what string) {
	if c.stores.Leases == nil || len(raws) == 0 {
		return
	}
	if _, err := c.stores.Leases.Release(ctx, lease.ClaimIDs(raws)); err != nil {
		c.logger.WarnContext(ctx, "claims not released; they return after the lease", "claims", what, "documents", len(raws), "error", err)
	}
}

// requeueWriteBlocked is the reason of requeueBlocked in logs and metrics.
const requeueWriteBlocked = "write_blocked"

// requeueIndexDeleted is the reason of dropDeletedIndices in logs and
// metrics: the claim is released, and nothing is left to take again.
const requeueIndexDeleted = "index_deleted"

// errorCodeStatusFlip labels classifier_documents_failed_total for a
// status flip that failed otherwise; the document returns after the lease.
const errorCodeStatusFlip = "STATUS_FLIP"

// blockedChange is a status change a write block refused, with the
// refusal.
type blockedChange struct {
	rawindex.Change
	err error
}

// flipOnce sends the status changes once. It returns those that took
// effect, those to try again once Elasticsearch answers, those refused
// because the document changed (rawindex.ErrChanged), which is no fault of
// Elasticsearch, and those refused by a write block on their index.
func (c *Committer) flipOnce(ctx context.Context, changes []rawindex.Change) (flipped, retry, conflicts []rawindex.Change, blocked []blockedChange) {
	es := c.breakers.Elasticsearch
	items, err := c.stores.Raw.Flip(ctx, changes)
	if err != nil {
		if fault.ElasticsearchProved(ctx, err, c.stores.Raw.Ping) == fault.Dependency {
			es.Failure(err)
			return nil, changes, nil, nil
		}
		c.logger.ErrorContext(ctx, "status flip failed; documents stay claimed and return after the lease",
			"documents", len(changes), "error", err)
		c.metrics.DocumentsFailed.Add(ctx, int64(len(changes)), metric.WithAttributes(attribute.String("error_code", errorCodeStatusFlip)))
		return nil, nil, nil, nil
	}
	es.Success()
	for i, item := range items {
		switch {
		case item.Err == nil:
			flipped = append(flipped, changes[i])
		case rawindex.Changed(item.Err):
			conflicts = append(conflicts, changes[i])
		case fault.ElasticsearchItem(item.Status, item.Err.Error()) == fault.Dependency:
			es.Failure(item.Err)
			retry = append(retry, changes[i])
		case item.Status == http.StatusForbidden && fault.IsBlock(item.Err.Error()):
			blocked = append(blocked, blockedChange{changes[i], item.Err})
		default:
			// The document returns after the lease.
			c.metrics.DocumentsFailed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", changes[i].Raw.SourceName),
				attribute.String("error_code", errorCodeStatusFlip)))
			c.logger.WarnContext(ctx, "status flip rejected; the document returns after the lease", "content_id", changes[i].Raw.ID,
				"source", changes[i].Raw.SourceName, "index", changes[i].Raw.Index, "error_code", errorCodeStatusFlip, "error", item.Err)
		}
	}
	return flipped, retry, conflicts, blocked
}

// dropSuperseded moves from news to quiet the results whose document
// another attempt has decided a newer version of since this one planned
// (a replica that took it over while this one was paused): their outcome
// is stale and is not written to the outbox; the flip that follows is
// refused for them as taken over. When the check cannot be made, news is
// kept as it is (the outbox absorbs a version written twice).
func (c *Committer) dropSuperseded(ctx context.Context, news, quiet []Result) ([]Result, []Result) {
	if c.stores.Hygiene == nil || len(news) == 0 {
		return news, quiet
	}
	docs := make([]*domain.ClassifiedContent, len(news))
	for i, r := range news {
		docs[i] = r.Doc
	}
	_, stale, err := c.stores.Hygiene.superseded(ctx, docs)
	if err != nil {
		c.logger.WarnContext(ctx, "newer versions not checked before the outbox write", "documents", len(news), "error", err)
		return news, quiet
	}
	if len(stale) == 0 {
		return news, quiet
	}
	isStale := make(map[*domain.ClassifiedContent]bool, len(stale))
	for _, d := range stale {
		isStale[d] = true
	}
	kept := news[:0:0]
	for _, r := range news {
		if !isStale[r.Doc] {
			kept = append(kept, r)
			continue
		}
		r.Doc.Publish = false
		quiet = append(quiet, r)
		c.logger.WarnContext(ctx, "outcome superseded by another attempt's newer version; not written to the outbox",
			"content_id", r.Raw.ID, "source", r.Raw.SourceName, "version", r.Doc.Version)
	}
	return kept, quiet
}

// dropTakenOver returns results without those whose claim this replica
// no longer holds, and renews the others: it is the one ownership check.
// A replica paused or starved past its lease (a zombie) finds its claim
// taken over (the row carries another claim_id) and writes nothing of the
// document, neither its classified document, its outbox row nor its flip:
// the new owner commits it. A claim renewed here is safe from takeover for
// a whole lease, far longer than a commit. When the lease table cannot be
// read, the batch is held back: its claims return after the lease.
func (c *Committer) dropTakenOver(ctx context.Context, results []Result) []Result {
	if c.stores.Leases == nil {
		return results
	}
	raws := make([]*domain.RawContent, len(results))
	for i, r := range results {
		raws[i] = r.Raw
	}
	held, err := c.stores.Leases.Renew(ctx, lease.ClaimIDs(raws))
	if err != nil {
		c.logger.WarnContext(ctx, "claims could not be confirmed; the batch is not committed and returns after the lease",
			"documents", len(results), "error", err)
		for _, r := range results {
			c.stores.Claims.Take(r.Raw)
		}
		return nil
	}
	kept := results[:0:0]
	for _, r := range results {
		if r.Raw.Lease == 0 || held[r.Raw.Lease] {
			kept = append(kept, r)
			continue
		}
		c.stores.Claims.Take(r.Raw)
		c.logger.WarnContext(ctx, "claim taken over before the commit; this replica writes nothing of the document, its new owner commits it",
			"content_id", r.Raw.ID, "source", r.Raw.SourceName, "index", r.Raw.Index)
	}
	return kept
}

// account records what a committed batch means: metrics, resolved
// dead-letter entries, and source statistics.
func (c *Committer) account(ctx context.Context, flipped []rawindex.Change) {
	var resolved []domain.DocKey
	retried := 0
	deltas := map[string]reputation.Delta{}
	for _, ch := range flipped {
		src := ch.Raw.SourceName
		d := deltas[src]
		d.Total++
		if ch.Status == contentindex.StatusClassified {
			resolved = append(resolved, domain.DocKey{Index: ch.Raw.Index, ID: ch.Raw.ID})
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
		n, err := c.stores.DeadLetters.Remove(ctx, resolved...)
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
