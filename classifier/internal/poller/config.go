package poller

import (
	"time"

	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
)

// Defaults of Config.
const (
	PollIntervalDefault  = 2 * time.Second
	BatchSizeDefault     = 100
	IndexPatternDefault  = "*" + contentindex.RawSuffix
	IndexRefreshDefault  = 5 * time.Second
	IndexRetryDefault    = 5 * time.Second
	IndexRetryMaxDefault = 5 * time.Minute
	// ClaimVisibilityDefault is two of the raw indices' refresh intervals
	// (contentindex sets 1 s).
	ClaimVisibilityDefault = 2 * time.Second
)

// Config configures a Poller.
type Config struct {
	// ReplicaID is written to claimed_by. Required.
	ReplicaID string
	// IndexPattern selects the raw indices (a comma-separated list of
	// names, wildcards and -exclusions). Defaults to IndexPatternDefault.
	IndexPattern string
	// PollInterval is the wait after a poll that found nothing when none
	// found documents within the last PollInterval (and at least 30 s)
	// either; while documents are arriving the wait is at most
	// busyWaitMax. Defaults to PollIntervalDefault.
	PollInterval time.Duration
	// BatchSize is the number of documents claimed per poll.
	// Defaults to BatchSizeDefault.
	BatchSize int
	// ClaimVisibility is how long a document this replica just found is
	// left out of its index's searches (recent.go): the claim of it may not
	// be a row of the lease table yet when the next search runs. Defaults
	// to ClaimVisibilityDefault; at most half of the lease (Leases.Lease).
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
	c.RecencyScale = config.PositiveOr(c.RecencyScale, RecencyScaleDefault)
	c.UrgentAge = config.PositiveOr(c.UrgentAge, 3*c.RecencyScale)
	if c.IndexPattern == "" {
		c.IndexPattern = IndexPatternDefault
	}
	c.PollInterval = config.PositiveOr(c.PollInterval, PollIntervalDefault)
	c.BatchSize = config.PositiveOr(c.BatchSize, BatchSizeDefault)
	c.ClaimVisibility = config.PositiveOr(c.ClaimVisibility, ClaimVisibilityDefault)
	if c.Leases != nil {
		c.ClaimVisibility = min(c.ClaimVisibility, c.Leases.Lease()/2)
	}
	c.IndexRefresh = config.PositiveOr(c.IndexRefresh, IndexRefreshDefault)
	c.IndexRetry = config.PositiveOr(c.IndexRetry, IndexRetryDefault)
	c.IndexRetryMax = config.PositiveOr(c.IndexRetryMax, IndexRetryMaxDefault)
	if c.IndexRetryMax < c.IndexRetry {
		c.IndexRetryMax = c.IndexRetry
	}
}
