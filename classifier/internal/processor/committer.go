package processor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of CommitterConfig.
const (
	CommitBatchDefault   = 200
	CommitLingerDefault  = 50 * time.Millisecond
	CommitWorkersDefault = 4
	// UrgentWorkersDefault is the commit workers of urgent documents.
	UrgentWorkersDefault = 2
)

// Stores are the committer's outputs, each as the committer uses it (the
// service passes the stores of packages storage, rawindex, deadletter,
// reputation, claim and lease). DeadLetters, Reputation, Claims, Leases and
// Hygiene may be nil.
type Stores struct {
	// Content writes the classified documents.
	Content ContentWriter
	// Raw flips the status of the raw documents (the commit point).
	Raw RawFlipper
	// History records each classification; its Ping is the probe of the
	// classifier's database.
	History HistoryWriter
	// Outbox takes the rows the publisher publishes.
	Outbox OutboxWriter
	// DeadLetters records failures; nil when the DLQ is disabled
	// (CLASSIFIER_DLQ_ENABLED=false).
	DeadLetters DeadLetterQueue
	// Reputation adds each committed batch to its sources' statistics;
	// nil: reputation off.
	Reputation ReputationRecorder
	// Claims, when set, is the registry of claims in flight: the committer
	// takes each document out of it before its status flip, so the
	// heartbeat stops renewing it.
	Claims ClaimRegistry
	// Leases, when set, is the claim table: before writing anything of a
	// batch the committer renews its claims there (the one ownership
	// check), and after the flip it finishes them, or releases those whose
	// flip found the document changed.
	Leases LeaseTable
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
	// UrgentWorkers is the number of urgent batches (UrgentOutput) committed
	// at once, beside Workers. Fresh news is urgent, so on a running system
	// this is its path: with one worker each batch waited for the whole
	// commit of the batch before it (the median classify-to-commit doubled
	// at 50 docs/s). Defaults to UrgentWorkersDefault.
	UrgentWorkers int
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
	breakers Breakers
	tracer   trace.Tracer
	logger   *slog.Logger
	in       chan Result
	// urgent is the input of urgent documents' results (UrgentOutput): a
	// batching loop and commit workers of their own (UrgentWorkers), so
	// fresh news is not committed behind a queue of backlog.
	urgent chan Result

	// The jobs of a commit, in the order commit runs them.
	claims      claims      // the ownership check, and the claims after it
	outbox      outbox      // which documents are news, and their rows
	content     content     // the classified documents
	history     history     // the history rows
	deadLetters deadLetters // the failures
	flipper     flipper     // the commit point
	accountant  accountant  // what a committed batch means

	base lifecycle.Base // owns the batching loop and the commit workers
}

// NewCommitter returns a committer; its Output is what the workers write to.
func NewCommitter(cfg CommitterConfig, stores Stores, breakers Breakers, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) *Committer {
	cfg.Batch = config.PositiveOr(cfg.Batch, CommitBatchDefault)
	cfg.Linger = config.PositiveOr(cfg.Linger, CommitLingerDefault)
	cfg.Workers = config.PositiveOr(cfg.Workers, CommitWorkersDefault)
	cfg.UrgentWorkers = config.PositiveOr(cfg.UrgentWorkers, UrgentWorkersDefault)
	for _, b := range []struct {
		p    **breaker.Breaker
		name string
	}{{&breakers.Elasticsearch, "elasticsearch"}, {&breakers.Postgres, "postgres"}, {&breakers.Outbox, "outbox_postgres"}} {
		if *b.p == nil {
			*b.p = breaker.MustNew(breaker.Config{Name: b.name})
		}
	}
	logger = logger.With("component", "committer")
	// The classifier's database: history, hygiene's records, dead letters.
	classifierDB := database{breaker: breakers.Postgres}
	if stores.History != nil {
		classifierDB.probe = stores.History.Ping
	}
	cl := claims{registry: stores.Claims, leases: stores.Leases, logger: logger}
	return &Committer{cfg: cfg, breakers: breakers, tracer: tracer, logger: logger,
		in: make(chan Result, cfg.Batch*2), urgent: make(chan Result, cfg.Batch),
		claims: cl,
		outbox: outbox{store: stores.Outbox, breaker: breakers.Outbox, hygiene: stores.Hygiene, db: classifierDB,
			claims: cl, metrics: metrics, logger: logger},
		content:     content{store: stores.Content, es: breakers.Elasticsearch},
		history:     history{store: stores.History, db: classifierDB, logger: logger},
		deadLetters: deadLetters{queue: stores.DeadLetters, db: classifierDB, metrics: metrics, logger: logger},
		flipper:     flipper{raw: stores.Raw, es: breakers.Elasticsearch, claims: cl, metrics: metrics, logger: logger},
		accountant:  accountant{deadLetters: stores.DeadLetters, reputation: stores.Reputation, metrics: metrics, logger: logger},
	}
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
		for range c.cfg.UrgentWorkers {
			c.base.Go(func() {
				for batch := range urgent {
					c.commit(work, run.Done(), batch)
				}
			})
		}
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
	if results = c.claims.confirm(ctx, results); len(results) == 0 {
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
	c.deadLetters.report(ctx, failed)
	var parked []Result
	for pending := failed; len(pending) > 0; {
		p, retry, dep := c.deadLetters.park(ctx, pending)
		parked = append(parked, p...)
		if pending = retry; len(pending) > 0 && !c.await(ctx, stop, dep, len(pending)) {
			return
		}
	}

	written = c.outbox.requeueOrphans(ctx, written, failed)

	changes := make([]rawindex.Change, 0, len(written)+len(parked))
	for _, r := range written {
		changes = append(changes, rawindex.Change{Raw: r.Raw, Status: contentindex.StatusClassified, Doc: r.Doc})
	}
	for _, r := range parked {
		changes = append(changes, rawindex.Change{Raw: r.Raw, Status: contentindex.StatusFailed, Reason: string(r.Code) + ": " + r.Err.Error()})
	}
	// Every document of the batch is finished here, flipped or not: stop
	// renewing its claim. One left claimed returns after the lease.
	c.claims.take(results...)
	var flipped []rawindex.Change
	for pending := changes; len(pending) > 0; {
		f, retry := c.flipper.flip(ctx, pending)
		flipped = append(flipped, f...)
		if pending = retry; len(pending) > 0 && !c.await(ctx, stop, c.breakers.Elasticsearch, len(pending)) {
			break
		}
	}
	c.claims.finish(ctx, flipped)
	c.accountant.account(ctx, flipped)
}

// write stores successes, in this order: the publication decision
// (outbox.decide), the classified documents (content), the history rows,
// then the outbox rows and the published outcomes (outbox.publish), one
// statement each when they can. It returns the results fully written;
// those that failed, with their error code; and those to write again once
// dep, a dependency that failed as a whole, answers again.
func (c *Committer) write(ctx context.Context, ok []Result) (written, failed, retry []Result, dep *breaker.Breaker) {
	decided, failed, held := c.outbox.decide(ctx, ok)
	if held {
		return nil, nil, ok, c.breakers.Postgres
	}
	if len(decided) == 0 {
		return nil, failed, nil, nil
	}
	indexed, f, retry, dep := c.content.write(ctx, decided)
	failed = append(failed, f...)
	if len(indexed) == 0 {
		return nil, failed, retry, dep
	}
	stored, f, held := c.history.write(ctx, indexed)
	if held {
		return nil, failed, append(retry, indexed...), c.breakers.Postgres
	}
	failed = append(failed, f...)
	written, f, out := c.outbox.publish(ctx, stored)
	failed = append(failed, f...)
	if out != nil {
		return nil, failed, append(retry, stored...), out
	}
	return written, failed, retry, dep
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
