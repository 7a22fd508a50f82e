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
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/fault"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of Config.
const (
	PollIntervalDefault  = 2 * time.Second
	BatchSizeDefault     = 100
	ClaimLeaseDefault    = 5 * time.Minute
	IndexPatternDefault  = "*" + contentindex.RawSuffix
	IndexRefreshDefault  = 5 * time.Second
	IndexRetryDefault    = 5 * time.Second
	IndexRetryMaxDefault = 5 * time.Minute
	// ClaimVisibilityDefault is two of the raw indices' refresh intervals
	// (contentindex sets 1 s).
	ClaimVisibilityDefault = 2 * time.Second
)

// pauseWaitMax bounds the wait between looks at the breakers while one is
// not closed, so work resumes soon after the dependency is back.
const pauseWaitMax = 250 * time.Millisecond

// busyWaitMax bounds the wait between polls while documents are arriving
// (a poll found some within the last PollInterval): a steady stream should
// wait a fraction of the poll interval for its next poll, not all of it,
// even across the empty polls between two refreshes of its index. A
// replica that found nothing for a whole PollInterval waits the interval,
// so an idle one searches no more often than before.
const busyWaitMax = 250 * time.Millisecond

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

// Config configures a Poller.
type Config struct {
	// ReplicaID is written to claimed_by. Required.
	ReplicaID string
	// IndexPattern selects the raw indices (a comma-separated list of
	// names, wildcards and -exclusions). Defaults to IndexPatternDefault.
	IndexPattern string
	// PollInterval is the wait after a poll that found nothing when none
	// found documents within the last PollInterval either; while documents
	// are arriving the wait is at most busyWaitMax. Defaults to
	// PollIntervalDefault.
	PollInterval time.Duration
	// BatchSize is the number of documents claimed per poll.
	// Defaults to BatchSizeDefault.
	BatchSize int
	// ClaimLease is how long a claim keeps other replicas away.
	// Defaults to ClaimLeaseDefault.
	ClaimLease time.Duration
	// ClaimVisibility is how long a document this replica just claimed (or
	// lost to another writer) is left out of its index's searches: claims
	// are sent without a refresh, and a search sees them only after the
	// index's next one. Defaults to ClaimVisibilityDefault; at most half of
	// ClaimLease.
	ClaimVisibility time.Duration
	// IndexRefresh is how long the list of indices matching IndexPattern
	// (and their date mappings) is reused before it is read again; a new
	// raw index is polled within about this long. Defaults to
	// IndexRefreshDefault.
	IndexRefresh time.Duration
	// IndexRetry is the wait before a failing index is polled again; it
	// doubles with each consecutive failure up to IndexRetryMax. Defaults
	// to IndexRetryDefault and IndexRetryMaxDefault.
	IndexRetry    time.Duration
	IndexRetryMax time.Duration
	// Breakers are the circuit breakers of the dependencies a claimed
	// document needs (Elasticsearch, the classifier and outbox databases).
	// While any of them is not closed, the poller neither searches nor
	// claims: it looks again every min(PollInterval, 250ms).
	Breakers []*breaker.Breaker
	// ESBreaker, when set, is told the outcome of each whole Elasticsearch
	// request the poller makes: a failure when Elasticsearch is unreachable
	// or answers 5xx, 429, 401 or 403 (other than an index block), a
	// success otherwise. It also pauses the poller like Breakers.
	ESBreaker *breaker.Breaker
	// BacklogShare is the share of each poll that goes to the oldest
	// pending documents whatever their priority (priority.go); the rest
	// goes to the freshest. Defaults to BacklogShareDefault; negative (or
	// 1) takes every document oldest first, without priorities.
	BacklogShare float64
	// RecencyScale is the age at which a document's recency score is
	// half. Defaults to RecencyScaleDefault.
	RecencyScale time.Duration
	// SourcePriority, when set, returns the level an operator marked a
	// source with (contentindex.Priorities; "" or normal without a mark);
	// it is called for each index on each poll and must be quick (a
	// cache). A raw index is one source, so a mark decides per index how
	// its documents rank and which lanes it is searched in (priority.go):
	// the number of marks never grows a search.
	SourcePriority func(source string) string
	// Urgent, when set, is a small work queue of its own for urgent
	// documents (critical, or crawled within UrgentAge and neither low nor
	// cleanup), so they do
	// not wait behind a full queue of backlog: while the main queue is
	// full, the poller still claims urgent documents for it (priority.go).
	Urgent Sink
	// UrgentAge is how recent a document must be to be urgent. Defaults
	// to three RecencyScales.
	UrgentAge time.Duration
	// Leases is the claim table (package lease): a claim is a row there,
	// never a write to the raw document. Required.
	Leases *lease.Store
	// Raw is the raw index store the searches go through. Required.
	Raw *rawindex.Store
	// MaxStalls is how many times a document's lease may expire without a
	// commit before its next claim dead-letters it as STALLED instead of
	// classifying it (CLASSIFIER_MAX_STALLS). Zero: never.
	MaxStalls int
	// ReadRawHTML makes the searches read raw_html, which only a
	// classified document that copies the page needs
	// (CLASSIFIER_COPY_RAW_HTML); without it the page is left in the raw
	// index (rawindex.Pending.WithHTML).
	ReadRawHTML bool
}

func (c *Config) setDefaults() {
	switch {
	case c.BacklogShare == 0:
		c.BacklogShare = BacklogShareDefault
	case c.BacklogShare < 0:
		c.BacklogShare = 0
	}
	c.BacklogShare = min(c.BacklogShare, 1)
	if c.RecencyScale <= 0 {
		c.RecencyScale = RecencyScaleDefault
	}
	if c.UrgentAge <= 0 {
		c.UrgentAge = 3 * c.RecencyScale
	}
	if c.IndexPattern == "" {
		c.IndexPattern = IndexPatternDefault
	}
	if c.PollInterval <= 0 {
		c.PollInterval = PollIntervalDefault
	}
	if c.BatchSize <= 0 {
		c.BatchSize = BatchSizeDefault
	}
	if c.ClaimLease <= 0 {
		c.ClaimLease = ClaimLeaseDefault
	}
	if c.ClaimVisibility <= 0 {
		c.ClaimVisibility = ClaimVisibilityDefault
	}
	c.ClaimVisibility = min(c.ClaimVisibility, c.ClaimLease/2)
	if c.IndexRefresh <= 0 {
		c.IndexRefresh = IndexRefreshDefault
	}
	if c.IndexRetry <= 0 {
		c.IndexRetry = IndexRetryDefault
	}
	if c.IndexRetryMax <= 0 {
		c.IndexRetryMax = IndexRetryMaxDefault
	}
	if c.IndexRetryMax < c.IndexRetry {
		c.IndexRetryMax = c.IndexRetry
	}
}

// Poller is a long-lived component with Start and Stop.
type Poller struct {
	cfg     Config
	es      *esclient.Client
	sink    Sink
	metrics *telemetry.Metrics
	tracer  trace.Tracer
	logger  *slog.Logger
	now     func() time.Time

	loop     lifecycle.Loop
	failures int    // consecutive failed polls; touched by the loop only
	paused   bool   // a breaker held the last poll; touched by the loop only
	polls    uint64 // polls that searched; touched by the loop only
	// lastFound is when a poll last found documents; touched by the loop
	// only.
	lastFound time.Time
	// claiming is the outcome of the claim in flight (claim.go), nil when
	// none; claimingN is how many documents it carries. Touched by the
	// loop only, and by Stop (under stopMu) once the loop has ended.
	claiming  chan claimOutcome
	claimingN int
	// stopMu serializes Stops' collection of the claim in flight: a second
	// Stop waits for the first, then finds it collected.
	stopMu sync.Mutex

	// beforeClaim, when set (tests), runs between the search and the claim.
	beforeClaim func(found []*domain.RawContent)
	// recentMax is recentClaimsMax; tests lower it.
	recentMax int

	mu     sync.Mutex // guards the fields below; never held across a request
	res    *resolution
	states map[string]*indexState
	next   int                             // round-robin start among the indices due
	recent map[string]map[string]time.Time // index -> _id -> claimed at (recent.go)
}

// New returns a Poller; call Start to run it.
func New(cfg Config, es *esclient.Client, sink Sink, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) (*Poller, error) {
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
	p := &Poller{cfg: cfg, es: es, sink: sink, metrics: metrics,
		tracer: tracer, logger: logger.With("component", "poller"), now: time.Now,
		states: map[string]*indexState{},
		recent: map[string]map[string]time.Time{}, recentMax: recentClaimsMax}
	p.loop = lifecycle.Loop{Name: "poller", Step: p.step, Logger: p.logger}
	return p, nil
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
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if p.claiming == nil {
		return nil
	}
	select {
	case <-p.claiming:
	case <-ctx.Done():
		select { // select picks at random between two ready cases
		case <-p.claiming:
		default:
			return fmt.Errorf("stop poller: claim in flight: %w", ctx.Err())
		}
	}
	p.claiming, p.claimingN = nil, 0
	return nil
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
	prev, perr := p.collect()
	if ctx.Err() != nil {
		return 0
	}
	if err == nil && perr != nil {
		err = perr
	}
	if err == nil && len(b.docs) > 0 {
		p.launch(ctx, b)
	}
	var paused *pausedError
	if errors.As(err, &paused) {
		if !p.paused {
			p.paused = true
			p.logger.DebugContext(ctx, "poller paused: a dependency's circuit breaker is not closed",
				"breaker", paused.breaker.Name(), "state", paused.breaker.State().String())
		}
		return min(p.cfg.PollInterval, pauseWaitMax)
	}
	if p.paused {
		p.paused = false
		p.logger.DebugContext(ctx, "poller resumed: every circuit breaker is closed")
	}
	switch {
	case errors.Is(err, errThrottled):
		return min(p.cfg.PollInterval, 50*time.Millisecond)
	case err != nil:
		p.failures++
		wait := min(p.cfg.PollInterval*time.Duration(1<<min(p.failures, 5)), time.Minute)
		p.logger.ErrorContext(ctx, "poll failed", "error", err, "retry_in", wait.String())
		return lifecycle.Jitter(wait)
	case len(b.docs) > 0 && b.more && (prev == nil || prev.won > 0 || prev.lost > 0):
		// More is waiting and claims are being decided (the previous claim
		// won some, or lost some to another replica, which this poller's
		// searches now leave out; or this is the first): search again
		// while this claims. A replica that lost a race must not sit out
		// a poll interval while the winner takes the whole backlog.
		p.failures = 0
		return 0
	case len(b.docs) > 0 || p.now().Sub(p.lastFound) < p.cfg.PollInterval:
		// Documents are arriving (this poll found some, or one did within
		// the interval): look again soon.
		if len(b.docs) > 0 {
			p.lastFound = p.now()
		}
		p.failures = 0
		return lifecycle.Jitter(min(p.cfg.PollInterval, busyWaitMax))
	default:
		p.failures = 0
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
	size := min(p.cfg.BatchSize, p.sink.FreeSlots()-p.claimingN)
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

	r, err := p.resolve(ctx)
	if err != nil {
		return found{}, err
	}
	indices := p.window(p.due(ctx, r), size)
	if len(indices) == 0 {
		return found{}, nil
	}
	share := ceilDiv(size, len(indices))
	p.refreshCrowded(ctx, indices)
	p.polls++
	fresh, backlog := p.cfg.lanes(share, p.polls)
	if urgentOnly {
		fresh, backlog = share, 0
	}
	pages, err := p.searchLanes(ctx, indices, fresh, backlog, urgentOnly)
	p.esOutcome(ctx, err)
	if err != nil {
		return found{}, err
	}
	more := true
	if !urgentOnly {
		more = p.fillLeftover(ctx, pages, share, fresh, backlog, size)
	}

	// Take the batch level by level, round-robin across the indices, so
	// each gets its share.
	total := 0
	for _, pg := range pages {
		total += len(pg.docs)
	}
	docs := p.byLevel(pages, size)
	span.SetAttributes(attribute.Int("poll.indices", len(indices)), attribute.Int("poll.found", len(docs)))

	searched := map[string]bool{}
	for _, pg := range pages {
		if pg.err == "" {
			searched[pg.index] = true
		}
	}
	if len(docs) == 0 {
		for idx := range searched {
			p.markHealthy(ctx, idx)
		}
		return found{}, nil
	}
	p.noteFound(docs)
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
		p.markHealthy(ctx, idx)
	}
	// Won or lost, the documents are being classified: left out of the
	// searches, from now, until their index shows it.
	p.noteFound(f.docs)
	span.SetAttributes(attribute.Int("claim.won", len(won)))
	p.traceDocuments(ctx, won)
	if len(won) > 0 {
		p.metrics.BatchSize.Record(ctx, int64(len(won)))
	}
	for _, doc := range won {
		sink := p.sink
		if p.cfg.Urgent != nil && p.urgent(doc) && p.cfg.Urgent.FreeSlots() > 0 {
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

// fillLeftover gives the room the indices left in the batch to those that
// filled their share: one more search of them, each for its part of the
// rest, so that one source's backlog still fills whole batches while the
// others are idle. The second search continues the fresh lane after its
// first fresh documents. An index of a source marked low fills its share
// when its backlog lane is full, and gets the room only when no normal
// index filled its share; its second search continues its backlog lane. It
// reports whether an index may have more waiting.
func (p *Poller) fillLeftover(ctx context.Context, pages []page, share, fresh, backlog, size int) bool {
	total := 0
	var full, fullLow []int
	for i, pg := range pages {
		total += len(pg.docs)
		switch {
		case pg.err != "":
		case p.lowIndex(pg.index) && len(pg.docs) >= backlog:
			fullLow = append(fullLow, i)
		case len(pg.docs) >= share:
			full = append(full, i)
		}
	}
	left := size - total
	next := lane{from: fresh, fresh: true}
	if len(full) == 0 {
		full, next = fullLow, lane{from: backlog}
	}
	if len(full) == 0 || left <= 0 {
		return len(full) > 0 || len(fullLow) > 0
	}
	extra := ceilDiv(left, len(full))
	next.size = extra
	names := make([]string, len(full))
	for j, i := range full {
		names[j] = pages[i].index
	}
	more, err := p.search(ctx, names, []lane{next}, false)
	p.esOutcome(ctx, err)
	if err != nil {
		// The first round's documents are still worth claiming.
		p.logger.DebugContext(ctx, "second search for the rest of the batch failed", "error", err)
		return true
	}
	waiting := len(fullLow) > 0 && next.fresh
	for j, i := range full {
		seen := make(map[string]bool, len(pages[i].docs))
		for _, d := range pages[i].docs {
			seen[d.ID] = true
		}
		for _, d := range more[j].docs {
			if !seen[d.ID] { // documents may have moved between the two searches
				pages[i].docs = append(pages[i].docs, d)
			}
		}
		waiting = waiting || len(more[j].docs) >= extra
	}
	return waiting
}

// window returns at most size of the due indices, starting at a position
// that moves on every poll, so that with more indices than the batch every
// index gets its turn, and the index served first changes.
func (p *Poller) window(due []string, size int) []string {
	if len(due) == 0 {
		return nil
	}
	p.mu.Lock()
	start := p.next % len(due)
	n := min(len(due), size)
	if n < len(due) {
		p.next = start + n
	} else {
		p.next = start + 1
	}
	p.mu.Unlock()
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, due[(start+i)%len(due)])
	}
	return out
}

// esOutcome tells the Elasticsearch breaker how a whole request went.
func (p *Poller) esOutcome(ctx context.Context, err error) {
	b := p.cfg.ESBreaker
	switch {
	case b == nil:
	case err == nil:
		b.Success()
	case p.isDependencyFault(ctx, err):
		b.Failure(err)
	}
}

// isDependencyFault reports an error of a whole request that is
// Elasticsearch's, not the request's (fault.ElasticsearchProved):
// unreachable, unavailable (5xx), overloaded (429), refusing our
// credentials (401, or 403 other than an index block), or timed out on our
// side while the cluster also fails a ping.
func (p *Poller) isDependencyFault(ctx context.Context, err error) bool {
	return fault.ElasticsearchProved(ctx, err, esclient.Ping(p.es)) == fault.Dependency
}

// page is one index's answer in a multi-search.
type page struct {
	index string
	docs  []*domain.RawContent
	err   string // the index's search failed
}

// lane is one ranked search of an index: the fresh lane ranks pending
// documents by priority, the backlog lane takes the oldest (priority.go).
type lane struct {
	from, size int
	fresh      bool
	urgentOnly bool // only documents that are urgent (priority.go)
}

// searchLanes searches every index in its fresh and backlog lanes; with
// urgentOnly the fresh lane keeps only urgent documents.
func (p *Poller) searchLanes(ctx context.Context, indices []string, fresh, backlog int, urgentOnly bool) ([]page, error) {
	var lanes []lane
	if fresh > 0 {
		lanes = append(lanes, lane{size: fresh, fresh: true, urgentOnly: urgentOnly})
	}
	if backlog > 0 {
		lanes = append(lanes, lane{size: backlog})
	}
	return p.search(ctx, indices, lanes, true)
}

// search sends one multi-search with one search per index and lane
// (rawindex.SearchPending). An index's page holds its lanes' documents in
// lane order, each once. An index whose search fails is reported in its
// page, and marked failing when mark is set; the error is that of the
// request as a whole.
func (p *Poller) search(ctx context.Context, indices []string, lanes []lane, mark bool) ([]page, error) {
	live, err := p.cfg.Leases.Live(ctx, indices)
	if err != nil {
		return nil, fmt.Errorf("search pending: %w", err)
	}
	now := p.now()
	searches := make([]rawindex.Search, 0, len(indices)*len(lanes))
	for _, idx := range indices {
		exclude := append(p.recentIDs(idx, now), live[idx]...)
		level := p.sourceLevel(idx)
		for _, l := range lanes {
			searches = append(searches, rawindex.Search{Index: idx, Query: p.pendingQuery(l, level, exclude, now)})
		}
	}
	answers, err := p.cfg.Raw.SearchPending(ctx, searches)
	if err != nil {
		return nil, err
	}
	pages := make([]page, len(indices))
	for i, idx := range indices {
		pages[i].index = idx
		seen := map[string]bool{}
		for j := range lanes {
			a := answers[i*len(lanes)+j]
			switch {
			case a.Failed() && a.Status == http.StatusTooManyRequests:
				// The cluster is busy; the index is not at fault.
				pages[i].err = "busy"
			case a.Failed() && a.Status == http.StatusNotFound:
				// Deleted since it was listed: list again.
				pages[i].err = "gone"
				p.invalidate()
			case a.Failed():
				pages[i].err = fmt.Sprintf("search failed (status %d): %s", a.Status, a.Err)
				if mark {
					p.markFailing(ctx, idx, ReasonSearch, pages[i].err)
				}
			default:
				for _, d := range a.Docs {
					if !seen[d.ID] {
						seen[d.ID] = true
						pages[i].docs = append(pages[i].docs, d)
					}
				}
				continue
			}
			pages[i].docs = nil // a lane that failed fails the index's page
			break
		}
	}
	return pages, nil
}
