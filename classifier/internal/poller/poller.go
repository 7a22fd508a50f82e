// Package poller finds pending raw documents in the raw content indices
// (package rawindex; leaving out those under a live claim), claims a batch
// for this replica in the lease table (package lease: no write to the raw
// documents) and hands it to a batch handler.
//
// Each raw index is polled on its own, so a fault stays with the index that
// caused it: the indices matching the pattern are listed (cached for
// IndexRefresh), and one _msearch carries one search per index, each taking
// a fair share of the batch. An index whose mapping or search fails, or
// that carries a write block, is skipped with its reason (IndexStatus, a
// log line, the classifier_index_poll_failing gauge) and retried with
// backoff, while the others keep flowing. Only claims this replica won count towards "a full
// page, poll again at once", so claims that cannot be won never make the
// poller spin. While a circuit breaker of a dependency is open, the poller
// neither searches nor claims.
package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/fault"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// pauseWaitMax bounds the wait between looks at the breakers while one is
// not closed, so work resumes soon after the dependency is back.
const pauseWaitMax = 250 * time.Millisecond

// busyWaitMax bounds the wait between polls while documents are arriving
// (a poll found some within the last busyWindow): a steady stream should
// wait a fraction of the poll interval for its next poll, not all of it,
// even across the empty polls between two refreshes of its index. A
// replica that found nothing for a whole busyWindow waits the interval,
// so an idle one searches no more often than before.
const busyWaitMax = 250 * time.Millisecond

// busyWindowMin is the least time a poller keeps polling every busyWaitMax
// after it last found documents (busyWindow). A stream that pauses for a
// few seconds (a crawler between two pages, a refresh that came late on a
// loaded cluster) is still a stream: falling back to the whole poll
// interval at the first gap longer than it held the next document up to
// that interval, and was the end-to-end latency's tail.
const busyWindowMin = 30 * time.Second

// busyWindow is how long after its last find the poller still polls every
// busyWaitMax: PollInterval, and at least busyWindowMin.
func (p *Poller) busyWindow() time.Duration { return max(p.cfg.PollInterval, busyWindowMin) }

// Sink takes claimed documents: the batch processor's work queue.
type Sink interface {
	// Submit queues a document, with backpressure; on error the document
	// stays claimed and its lease returns it to the poll.
	Submit(ctx context.Context, doc *domain.RawContent) error
	// ShouldThrottle reports a work queue more than 80% full.
	ShouldThrottle() bool
	// FreeSlots is the room left in the work queue.
	FreeSlots() int
}

// Poller is a long-lived component with Start and Stop. Its loop runs the
// poll; each of the poll's jobs is a part of its own: finding the indices
// (indexWatch), choosing lanes and priorities (priorities), searching
// (searcher), remembering what was just found (recentClaims) and claiming
// in the background (inflight).
type Poller struct {
	cfg     Config
	sink    Sink
	metrics *telemetry.Metrics
	tracer  trace.Tracer
	logger  *slog.Logger
	now     func() time.Time

	loop     lifecycle.Loop
	pace     pace     // touched by the loop only
	inflight inflight // the claim in flight (claim.go)
	watch    *indexWatch
	prio     priorities
	search   *searcher
	recent   *recentClaims

	// beforeClaim, when set (tests), runs between the search and the claim.
	beforeClaim func(found []*domain.RawContent)
}

// pace is the loop's memory of the polls before: it decides the wait
// before the next one (Poller.step).
type pace struct {
	failures int    // consecutive failed polls
	paused   bool   // a breaker held the last poll
	polls    uint64 // polls that searched
	// lastFound is when a poll last found documents.
	lastFound time.Time
}

// New returns a Poller; call Start to run it.
func New(cfg Config, sink Sink, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) (*Poller, error) {
	cfg.setDefaults()
	if cfg.ReplicaID == "" {
		return nil, errors.New("new poller: ReplicaID is required")
	}
	if sink == nil {
		return nil, errors.New("new poller: sink is required")
	}
	if cfg.Leases == nil {
		return nil, errors.New("new poller: Leases is required")
	}
	if cfg.Raw == nil {
		return nil, errors.New("new poller: Raw is required")
	}
	p := &Poller{sink: sink, metrics: metrics, tracer: tracer, logger: logger.With("component", "poller"), now: time.Now}
	p.cfg = cfg
	now := func() time.Time { return p.now() } // tests move p.now
	p.watch = &indexWatch{cfg: &p.cfg, metrics: metrics, logger: p.logger, now: now, outcome: p.esOutcome,
		replaced: p.forgetIncarnation, states: map[string]*indexState{}}
	p.prio = priorities{cfg: &p.cfg, now: now}
	p.recent = newRecentClaims(&p.cfg, p.logger, now)
	p.search = &searcher{cfg: &p.cfg, prio: p.prio, watch: p.watch, recent: p.recent, outcome: p.esOutcome,
		logger: p.logger, now: now}
	p.loop = lifecycle.Loop{Name: "poller", Step: p.step, Logger: p.logger}
	return p, nil
}

// IndexStatus returns the poll state of every raw index matching the
// pattern, by name, as of this replica's last poll; empty before the first.
// It is safe for concurrent use.
func (p *Poller) IndexStatus() []IndexStatus { return p.watch.status() }

// forgetIncarnation forgets what this replica knows of the documents of an
// index that was deleted (uuid empty) or created again under its name
// (uuid its new one): the documents it just found, and every replica's
// claims on them (lease.Store.Forget). They are gone with their index; the
// new incarnation's documents, whatever their ids and versions, are found
// and claimed as new ones. A claim still in flight on an old document is
// lost, so its owner commits nothing. A failure to forget the claims is
// logged: claims of the new incarnation take the old rows over anyway, and
// the old rows leave the searches when their leases end.
func (p *Poller) forgetIncarnation(ctx context.Context, index, uuid string) {
	p.recent.forget(index)
	n, err := p.cfg.Leases.Forget(ctx, index, uuid)
	switch {
	case err != nil:
		p.logger.WarnContext(ctx, "raw index deleted or recreated; its old claims could not be forgotten", "index", index, "error", err)
	case uuid == "":
		p.logger.InfoContext(ctx, "raw index deleted; its claims forgotten", "index", index, "claims", n)
	default:
		p.logger.InfoContext(ctx, "raw index created again under its name; the old incarnation's claims forgotten",
			"index", index, "index_uuid", uuid, "claims", n)
	}
}

// esOutcome tells the Elasticsearch breaker how a whole request went.
func (p *Poller) esOutcome(ctx context.Context, err error) {
	b := p.cfg.ESBreaker
	switch {
	case b == nil:
	case err == nil:
		b.Success()
	case fault.ElasticsearchProved(ctx, err, p.cfg.Raw.Ping) == fault.Dependency:
		// Elasticsearch's fault, not the request's: unreachable,
		// unavailable (5xx), overloaded (429), refusing our credentials
		// (401, or 403 other than an index block), or timed out on our
		// side while the cluster also fails a ping.
		b.Failure(err)
	}
}

// Start launches the poll loop. Starting a started poller does nothing.
func (p *Poller) Start(ctx context.Context) error {
	p.logger.InfoContext(ctx, "poller starting", "replica", p.cfg.ReplicaID, "index_pattern", p.cfg.IndexPattern,
		"batch_size", p.cfg.BatchSize, "poll_interval", p.cfg.PollInterval.String())
	return p.loop.Start(ctx)
}

// Stop ends the loop after the poll in hand and waits for it and for the
// claim in flight, bounded by ctx. Documents already submitted are the work
// queue's; none is lost.
func (p *Poller) Stop(ctx context.Context) error {
	if err := p.loop.Stop(ctx); err != nil {
		return err
	}
	return p.inflight.wait(ctx)
}

// step polls once and returns the wait before the next poll: none when
// claims are being won and more is waiting, a short one while the work
// queue is too full or a breaker is open, a growing one after failures, the
// poll interval otherwise (nothing found, or nothing won).
//
// Polls overlap: a step searches, then waits for the previous step's claim
// to end, then starts its own claim in the background and returns; the next
// search runs while it is claimed (claim.go). The documents found are left
// out of the next search at once, so the two never overlap, and the room in
// the work queue counts the documents being claimed.
func (p *Poller) step(ctx context.Context) time.Duration {
	b, err := p.find(ctx)
	prev, perr := p.inflight.collect()
	if ctx.Err() != nil {
		return 0
	}
	if err == nil && perr != nil {
		err = perr
	}
	if err == nil && len(b.docs) > 0 {
		p.inflight.launch(len(b.docs), func() (pollResult, error) { return p.claim(ctx, b) })
	}
	var paused *pausedError
	if errors.As(err, &paused) {
		if !p.pace.paused {
			p.pace.paused = true
			p.logger.DebugContext(ctx, "poller paused: a dependency's circuit breaker is not closed",
				"breaker", paused.breaker.Name(), "state", paused.breaker.State().String())
		}
		return min(p.cfg.PollInterval, pauseWaitMax)
	}
	if p.pace.paused {
		p.pace.paused = false
		p.logger.DebugContext(ctx, "poller resumed: every circuit breaker is closed")
	}
	switch {
	case errors.Is(err, errThrottled):
		return min(p.cfg.PollInterval, 50*time.Millisecond)
	case err != nil:
		p.pace.failures++
		wait := min(p.cfg.PollInterval*time.Duration(1<<min(p.pace.failures, 5)), time.Minute)
		p.logger.ErrorContext(ctx, "poll failed", "error", err, "retry_in", wait.String())
		return lifecycle.Jitter(wait)
	case len(b.docs) > 0 && b.more && (prev == nil || prev.won > 0 || prev.lost > 0):
		// More is waiting and claims are being decided (the previous claim
		// won some, or lost some to another replica, which this poller's
		// searches now leave out; or this is the first): search again
		// while this claims. A replica that lost a race must not sit out
		// a poll interval while the winner takes the whole backlog.
		p.pace.failures = 0
		return 0
	case len(b.docs) > 0 || p.now().Sub(p.pace.lastFound) < p.busyWindow():
		// Documents are arriving (this poll found some, or one did within
		// the busy window): look again soon.
		if len(b.docs) > 0 {
			p.pace.lastFound = p.now()
		}
		p.pace.failures = 0
		return lifecycle.Jitter(min(p.cfg.PollInterval, busyWaitMax))
	default:
		p.pace.failures = 0
		return lifecycle.Jitter(p.cfg.PollInterval) // jitter keeps replicas apart
	}
}

// PollOnce claims up to BatchSize documents, never more than the work queue
// has room for, and submits those it won. It returns how many it won: lost
// and refused claims do not count.
func (p *Poller) PollOnce(ctx context.Context) (int, error) {
	r, err := p.poll(ctx)
	return r.won, err
}

// poll searches and claims in turn: one whole poll, for PollOnce.
func (p *Poller) poll(ctx context.Context) (pollResult, error) {
	b, err := p.find(ctx)
	if err != nil || len(b.docs) == 0 {
		return pollResult{}, err
	}
	return p.claim(ctx, b)
}

// pollResult is the outcome of one poll.
type pollResult struct {
	// won is the number of claims won (and submitted).
	won int
	// lost is the number of claims lost to another writer (a conflict).
	lost int
	// more is set when claims were won and more documents are waiting (an
	// index filled its share, or the page had more than the batch): the
	// loop polls again at once.
	more bool
}

// errThrottled tells the loop the work queue is too full to poll.
var errThrottled = errors.New("work queue over 80% full")

// pausedError tells the loop a breaker holds the poll.
type pausedError struct{ breaker *breaker.Breaker }

func (e *pausedError) Error() string {
	return fmt.Sprintf("poll paused: %s circuit breaker %s", e.breaker.Name(), e.breaker.State())
}

// found is what one poll's search found, to claim.
type found struct {
	docs     []*domain.RawContent
	searched map[string]bool // indices searched without error
	// more is set when more documents may be waiting (an index filled its
	// share, or the page had more than the batch).
	more bool
}

// find searches for up to BatchSize documents to claim, never more than
// the work queue has room for once the claim in flight is in it, and
// leaves those it found out of the next searches.
func (p *Poller) find(ctx context.Context) (found, error) {
	if ok, b := breaker.AllClosed(p.cfg.Breakers...); !ok {
		return found{}, &pausedError{breaker: b}
	}
	if ok, b := breaker.AllClosed(p.cfg.ESBreaker); !ok {
		return found{}, &pausedError{breaker: b}
	}
	size := min(p.cfg.BatchSize, p.sink.FreeSlots()-p.inflight.documents())
	urgentOnly := false
	if p.sink.ShouldThrottle() || size <= 0 {
		// The main queue is full: only urgent documents, for their queue.
		room := 0
		if p.cfg.Urgent != nil && !p.cfg.Urgent.ShouldThrottle() {
			room = p.cfg.Urgent.FreeSlots()
		}
		if room <= 0 {
			p.metrics.ThrottleCount.Add(ctx, 1)
			return found{}, errThrottled
		}
		size, urgentOnly = min(p.cfg.BatchSize, room), true
	}
	ctx, span := p.tracer.Start(ctx, "classifier.poll")
	defer span.End()

	r, err := p.watch.resolve(ctx)
	if err != nil {
		return found{}, err
	}
	indices := p.watch.window(p.watch.due(ctx, r), size)
	if len(indices) == 0 {
		return found{}, nil
	}
	share := ceilDiv(size, len(indices))
	p.recent.refreshCrowded(ctx, indices)
	p.pace.polls++
	fresh, backlog := p.cfg.lanes(share, p.pace.polls)
	if urgentOnly {
		fresh, backlog = share, 0
	}
	pages, err := p.search.searchLanes(ctx, indices, fresh, backlog, urgentOnly)
	p.esOutcome(ctx, err)
	if err != nil {
		return found{}, err
	}
	more := true
	if !urgentOnly {
		more = p.search.fillLeftover(ctx, pages, share, fresh, backlog, size)
	}

	// Each document carries the incarnation of the index it was found in:
	// claims compare versions only within one (lease.Doc.IndexUUID).
	for _, pg := range pages {
		for _, d := range pg.docs {
			d.IndexUUID = r.uuid[pg.index]
		}
	}
	// Take the batch level by level, round-robin across the indices, so
	// each gets its share.
	total := 0
	for _, pg := range pages {
		total += len(pg.docs)
	}
	docs := p.prio.byLevel(pages, size)
	span.SetAttributes(attribute.Int("poll.indices", len(indices)), attribute.Int("poll.found", len(docs)))

	searched := map[string]bool{}
	for _, pg := range pages {
		if pg.err == "" {
			searched[pg.index] = true
		}
	}
	if len(docs) == 0 {
		for idx := range searched {
			p.watch.markHealthy(ctx, idx)
		}
		return found{}, nil
	}
	p.recent.note(docs)
	return found{docs: docs, searched: searched, more: more || total > len(docs)}, nil
}

// claim claims what find found and submits the documents it won.
func (p *Poller) claim(ctx context.Context, f found) (pollResult, error) {
	ctx, span := p.tracer.Start(ctx, "classifier.claim", trace.WithAttributes(attribute.Int("claim.documents", len(f.docs))))
	defer span.End()
	if p.beforeClaim != nil {
		p.beforeClaim(f.docs)
	}
	claimed, err := p.cfg.Leases.ClaimDocs(ctx, f.docs, p.cfg.MaxStalls)
	if err != nil {
		return pollResult{}, fmt.Errorf("claim: %w", err)
	}
	won := inFoundOrder(f.docs, claimed)
	// A claim not won is held by another replica: lost, like a race.
	lost := len(f.docs) - len(won)
	for idx := range f.searched {
		p.watch.markHealthy(ctx, idx)
	}
	// Won or lost, the documents are being classified: left out of the
	// searches, from now, until their index shows it.
	p.recent.note(f.docs)
	span.SetAttributes(attribute.Int("claim.won", len(won)))
	p.traceDocuments(ctx, won)
	if len(won) > 0 {
		p.metrics.BatchSize.Record(ctx, int64(len(won)))
	}
	for _, doc := range won {
		sink := p.sink
		if p.cfg.Urgent != nil && p.prio.urgent(doc) && p.cfg.Urgent.FreeSlots() > 0 {
			sink = p.cfg.Urgent
		}
		if doc.Stalled {
			p.logger.WarnContext(ctx, "document's lease expired without a commit too many times; dead-lettering it as STALLED",
				"content_id", doc.ID, "index", doc.Index, "source", doc.SourceName, "max_stalls", p.cfg.MaxStalls)
		}
		if err := sink.Submit(ctx, doc); err != nil {
			// The document stays claimed; the lease returns it.
			p.logger.WarnContext(ctx, "work queue refused a claimed document; it returns after the claim lease",
				"content_id", doc.ID, "index", doc.Index, "source", doc.SourceName, "error", err)
		}
	}
	return pollResult{won: len(won), lost: lost, more: (len(won) > 0 || lost > 0) && f.more}, nil
}

// inFoundOrder returns the documents of found that are in claimed, in the
// order found has them (by level, round-robin across the indices), which is
// the order they are submitted in; the lease table answers in its own.
func inFoundOrder(found, claimed []*domain.RawContent) []*domain.RawContent {
	isClaimed := make(map[*domain.RawContent]bool, len(claimed))
	for _, d := range claimed {
		isClaimed[d] = true
	}
	out := make([]*domain.RawContent, 0, len(claimed))
	for _, d := range found {
		if isClaimed[d] {
			out = append(out, d)
		}
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
