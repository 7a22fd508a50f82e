package processor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/fault"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
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
	Content     *storage.ContentStore
	History     *storage.HistoryRepository
	Outbox      *storage.OutboxWriter
	DeadLetters *deadletter.Repository
	Reputation  *reputation.Repository
	// Claims, when set, is the registry of claims in flight: the committer
	// takes each document out of it before its status flip, so the
	// heartbeat stops renewing it and its version is final.
	Claims *claim.Registry
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
// A fault stays with what caused it (package fault): a row that a batched
// write refuses is isolated by splitting the batch, and only that row is
// dead-lettered; an outage of a dependency opens its breaker and the
// committer holds the batch and retries it when the dependency answers
// again, charging no document a retry.
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
	var parked []Result
	for pending := failed; len(pending) > 0; {
		p, retry, dep := c.deadLetter(ctx, pending)
		parked = append(parked, p...)
		if pending = retry; len(pending) > 0 && !c.await(ctx, stop, dep, len(pending)) {
			return
		}
	}

	changes := make([]storage.StatusChange, 0, len(written)+len(parked))
	for _, r := range written {
		changes = append(changes, storage.StatusChange{Raw: r.Raw, Status: contentindex.StatusClassified, Doc: r.Doc})
	}
	for _, r := range parked {
		changes = append(changes, storage.StatusChange{Raw: r.Raw, Status: contentindex.StatusFailed, Reason: string(r.Code) + ": " + r.Err.Error()})
	}
	// Every document of the batch is finished here, flipped or not: stop
	// renewing its claim. One left claimed returns after the lease.
	for _, r := range results {
		c.stores.Claims.Take(r.Raw)
	}
	var flipped []storage.StatusChange
	for pending := changes; len(pending) > 0; {
		f, retry := c.flip(ctx, pending)
		flipped = append(flipped, f...)
		if pending = retry; len(pending) > 0 && !c.await(ctx, stop, c.breakers.Elasticsearch, len(pending)) {
			break
		}
	}
	c.account(ctx, flipped)
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

// write stores successes: Elasticsearch bulk, then history and outbox rows
// in one statement each. It returns the results fully written; those that
// failed, with their error code; and those to write again once dep, a
// dependency that failed as a whole, answers again.
func (c *Committer) write(ctx context.Context, ok []Result) (written, failed, retry []Result, dep *breaker.Breaker) {
	docs := make([]*domain.ClassifiedContent, len(ok))
	for i, r := range ok {
		docs[i] = r.Doc
	}
	if err := c.stores.Hygiene.decide(ctx, docs); err != nil {
		if fault.Postgres(err) == fault.Dependency {
			c.breakers.Postgres.Failure(err)
			return nil, nil, ok, c.breakers.Postgres
		}
		return nil, withError(ok, domain.ErrorCodeDB, err), nil, nil
	}
	es := c.breakers.Elasticsearch
	items, err := c.stores.Content.WriteClassified(ctx, docs)
	if err != nil {
		switch kind := fault.Elasticsearch(err); kind {
		case fault.Dependency:
			es.Failure(err)
			return nil, nil, ok, es
		default:
			return nil, withError(ok, fault.Code(kind, true, err), err), nil, nil
		}
	}
	es.Success()
	var esWritten []Result
	for i, item := range items {
		if item.Err == nil {
			esWritten = append(esWritten, ok[i])
			continue
		}
		switch kind := fault.ElasticsearchItem(item.Status, item.Err.Error()); kind {
		case fault.Dependency:
			es.Failure(item.Err)
			retry, dep = append(retry, ok[i]), es
		default:
			failed = append(failed, Result{Raw: ok[i].Raw, Err: item.Err, Code: fault.Code(kind, true, item.Err)})
		}
	}
	if len(esWritten) == 0 {
		return nil, failed, retry, dep
	}
	written, f, err := c.insertIsolated(ctx, esWritten, c.stores.History.InsertBatch)
	failed = append(failed, f...)
	if err != nil {
		c.breakers.Postgres.Failure(err)
		return nil, failed, append(retry, esWritten...), c.breakers.Postgres
	}
	c.breakers.Postgres.Success()
	// Only news goes to the outbox: a duplicate held back or an unchanged
	// outcome is written and flipped like the rest, without a row.
	var news, quiet []Result
	for _, r := range written {
		if r.Doc.Publish {
			news = append(news, r)
		} else {
			quiet = append(quiet, r)
		}
	}
	news, f, err = c.insertIsolated(ctx, news, c.stores.Outbox.WriteBatch)
	failed = append(failed, f...)
	if err != nil {
		c.breakers.Outbox.Failure(err)
		return nil, failed, append(retry, esWritten...), c.breakers.Outbox
	}
	c.breakers.Outbox.Success()
	published := make([]*domain.ClassifiedContent, len(news))
	for i, r := range news {
		published[i] = r.Doc
	}
	if err := c.stores.Hygiene.record(ctx, published); err != nil {
		// The rows are in the outbox; written again, they are absorbed
		// (same version) and the record is tried again.
		if fault.Postgres(err) == fault.Dependency {
			c.breakers.Postgres.Failure(err)
			return nil, failed, append(retry, esWritten...), c.breakers.Postgres
		}
		return nil, append(failed, withError(esWritten, domain.ErrorCodeDB, err)...), retry, dep
	}
	c.countHygiene(ctx, written)
	return append(news, quiet...), failed, retry, dep
}

// insertIsolated inserts the documents of rs with insert, one statement for
// all of them when it can. When the statement is refused because of a row
// (fault.Document: an invalid byte sequence, a value too long), the batch is
// split in halves and each half tried again, down to the row at fault,
// which alone fails with its own error; the other rows are inserted. An
// error that is not a row's (the database is down) is returned as err.
func (c *Committer) insertIsolated(ctx context.Context, rs []Result, insert func(context.Context, []*domain.ClassifiedContent) error) (ok, failed []Result, err error) {
	docs := make([]*domain.ClassifiedContent, len(rs))
	for i, r := range rs {
		docs[i] = r.Doc
	}
	ierr := insert(ctx, docs)
	if ierr == nil {
		return rs, nil, nil
	}
	switch kind := fault.Postgres(ierr); {
	case kind == fault.Dependency:
		return nil, nil, ierr
	case kind == fault.Transient:
		return nil, withError(rs, domain.ErrorCodeDB, ierr), nil
	case len(rs) == 1:
		return nil, withError(rs, domain.ErrorCodeValidation, ierr), nil
	}
	half := len(rs) / 2
	okA, failedA, err := c.insertIsolated(ctx, rs[:half], insert)
	if err != nil {
		return nil, nil, err
	}
	okB, failedB, err := c.insertIsolated(ctx, rs[half:], insert)
	if err != nil {
		return nil, nil, err
	}
	return append(okA, okB...), append(failedA, failedB...), nil
}

// deadLetter records failures in the DLQ and returns those that may now be
// flipped to failed, and those to record again once dep answers. Without a
// DLQ only validation failures are flipped (with their reason); other
// failures stay claimed for the lease to retry.
func (c *Committer) deadLetter(ctx context.Context, failed []Result) (parked, retry []Result, dep *breaker.Breaker) {
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
		return parked, nil, nil
	}
	entries := make([]deadletter.Failure, len(failed))
	for i, r := range failed {
		entries[i] = deadletter.Failure{ContentID: r.Raw.ID, Source: r.Raw.SourceName, Index: r.Raw.Index, Code: r.Code, Message: r.Err.Error()}
	}
	recorded, err := c.stores.DeadLetters.Record(ctx, entries)
	if err != nil {
		if fault.Postgres(err) == fault.Dependency {
			c.breakers.Postgres.Failure(err)
			return nil, failed, c.breakers.Postgres
		}
		// Entries are sanitized to fit their columns, so this is not
		// expected; the documents stay claimed and return after the lease.
		c.logger.ErrorContext(ctx, "dead-letter write failed; documents stay claimed and return after the lease",
			"documents", len(failed), "error", err)
		return nil, nil, nil
	}
	c.breakers.Postgres.Success()
	for _, rec := range recorded {
		if rec.Inserted {
			c.metrics.DLQEnqueued.Add(ctx, 1)
		}
		if rec.Exhausted {
			c.metrics.DLQExhausted.Add(ctx, 1)
			c.logger.ErrorContext(ctx, "dead-letter entry exhausted its retries", "content_id", rec.ContentID, "index", rec.Index)
		}
	}
	return failed, nil, nil
}

// flip performs the status changes and returns those that took effect, and
// those to try again once Elasticsearch answers. A change refused as a
// conflict is looked at once more (ownDrift): when the document still
// carries this replica's claim, the conflict came from its own renewal (one
// whose answer was lost to a timeout), and the change is made again at the
// version the document holds.
func (c *Committer) flip(ctx context.Context, changes []storage.StatusChange) (flipped, retry []storage.StatusChange) {
	flipped, retry, conflicts := c.flipOnce(ctx, changes)
	if again := c.ownDrift(ctx, conflicts); len(again) > 0 {
		f, r, _ := c.flipOnce(ctx, again)
		flipped, retry = append(flipped, f...), append(retry, r...)
	}
	return flipped, retry
}

// flipOnce sends the status changes once. It returns those that took
// effect, those to try again once Elasticsearch answers, and those refused
// as conflicts.
func (c *Committer) flipOnce(ctx context.Context, changes []storage.StatusChange) (flipped, retry, conflicts []storage.StatusChange) {
	es := c.breakers.Elasticsearch
	items, err := c.stores.Content.FlipStatus(ctx, changes)
	if err != nil {
		if fault.Elasticsearch(err) == fault.Dependency {
			es.Failure(err)
			return nil, changes, nil
		}
		c.logger.ErrorContext(ctx, "status flip failed; documents stay claimed and return after the lease",
			"documents", len(changes), "error", err)
		c.metrics.DocumentsFailed.Add(ctx, int64(len(changes)), metric.WithAttributes(attribute.String("error_code", "STATUS_FLIP")))
		return nil, nil, nil
	}
	es.Success()
	for i, item := range items {
		switch {
		case item.Err == nil:
			flipped = append(flipped, changes[i])
		case fault.ElasticsearchItem(item.Status, item.Err.Error()) == fault.Dependency:
			es.Failure(item.Err)
			retry = append(retry, changes[i])
		case esclient.IsConflict(item.Err):
			conflicts = append(conflicts, changes[i])
		default:
			// The document returns after the lease.
			c.logger.WarnContext(ctx, "status flip rejected", "content_id", changes[i].Raw.ID, "source", changes[i].Raw.SourceName,
				"taken_over", false, "error", item.Err)
		}
	}
	return flipped, retry, conflicts
}

// ownDrift reads the documents whose flip was refused as a conflict and
// returns the changes of those still claimed by this replica (status
// processing, claimed_by this replica, claimed_at not before this claim's),
// set to the version each holds now. The others were taken over after the
// lease (the new owner finishes them) or are gone: logged, never flipped.
func (c *Committer) ownDrift(ctx context.Context, conflicts []storage.StatusChange) []storage.StatusChange {
	if len(conflicts) == 0 {
		return nil
	}
	refs := make([]domain.DocKey, len(conflicts))
	for i, ch := range conflicts {
		refs[i] = domain.DocKey{Index: ch.Raw.Index, ID: ch.Raw.ID}
	}
	current, _, err := c.stores.Content.GetRaw(ctx, refs)
	if err != nil {
		c.logger.WarnContext(ctx, "status flips refused as conflicts and their documents unreadable; they return after the lease",
			"documents", len(conflicts), "error", err)
		return nil
	}
	byKey := make(map[domain.DocKey]*domain.RawContent, len(current))
	for _, cur := range current {
		byKey[domain.DocKey{Index: cur.Index, ID: cur.ID}] = cur
	}
	var again []storage.StatusChange
	for i, ch := range conflicts {
		cur := byKey[refs[i]]
		if cur != nil && stillOurs(ch.Raw, cur) {
			ch.Raw.SeqNo, ch.Raw.PrimaryTerm, ch.Raw.Source = cur.SeqNo, cur.PrimaryTerm, cur.Source
			again = append(again, ch)
			continue
		}
		// The claim was taken over after the lease; the new owner
		// finishes the document.
		c.logger.WarnContext(ctx, "status flip rejected", "content_id", ch.Raw.ID, "source", ch.Raw.SourceName,
			"taken_over", true)
	}
	if len(again) > 0 {
		c.logger.InfoContext(ctx, "status flips refused by this replica's own claim renewals; flipped at the current version",
			"documents", len(again))
	}
	return again
}

// stillOurs reports whether cur, the document as Elasticsearch holds it
// now, still carries the claim this replica made as claimed (or a renewal
// of it): a renewal only moves claimed_at forward, and no other replica
// writes this replica's claimed_by.
func stillOurs(claimed, cur *domain.RawContent) bool {
	return claimed.ClaimedBy != "" && claimed.ClaimedAt != nil &&
		cur.ClassificationStatus == contentindex.StatusProcessing && cur.ClaimedBy == claimed.ClaimedBy &&
		cur.ClaimedAt != nil && !cur.ClaimedAt.Before(*claimed.ClaimedAt)
}

// account records what a committed batch means: metrics, resolved
// dead-letter entries, and source statistics.
func (c *Committer) account(ctx context.Context, flipped []storage.StatusChange) {
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
