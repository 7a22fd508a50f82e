package main

import (
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/canonical"
	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/dedup"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/classifier/internal/processor"
	"github.com/north-cloud/classifier/internal/reprocess"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/service"
)

// Config is the classifier's whole configuration; docs/configuration.md
// lists every variable.
type Config struct {
	service.Common
	DB        postgres.Config
	OutboxDB  postgres.Config
	ES        esclient.Config
	Poller    poller.Config
	Processor processor.BatchProcessorConfig
	// Urgent sizes the queue and workers of urgent documents (fresh news).
	Urgent processor.BatchProcessorConfig
	// UrgentEnabled runs the urgent queue; off, urgent documents wait in
	// the main queue like the rest.
	UrgentEnabled bool
	Committer     processor.CommitterConfig
	Retry         deadletter.RetryConfig
	Heartbeat     claim.HeartbeatConfig
	// ClaimLease is how long a claim keeps other replicas away unless
	// renewed (CLASSIFIER_CLAIM_LEASE; lease.Config.Lease).
	ClaimLease time.Duration
	Store      storage.StoreConfig
	// Limits are what a raw document may carry (checked at the door).
	Limits admission.Limits
	// DeadLetters configures the dead-letter queue (permanent failures).
	DeadLetters deadletter.RepositoryConfig

	// Matcher is the active rule matcher (CLASSIFIER_RULE_MATCHER):
	// aho_corasick (the trie engine), token_index or naive; naive too when
	// the deprecated CLASSIFIER_USE_TRIE_ENGINE is false.
	Matcher rules.MatcherKind
	// RuleOptions are the engine's stemming and scoring (the matcher kind
	// is Matcher, or ShadowMatcher for the shadow engine).
	RuleOptions rules.Options
	// ShadowMatcher, when set, runs beside the active engine and counts
	// disagreements (shadow mode, docs/runbook.md).
	ShadowMatcher rules.MatcherKind
	// MatcherRolloutPercent is the share of documents (0..100, by the hash
	// of index and id) the ShadowMatcher's engine classifies, the current
	// one running in shadow for them (docs/runbook.md, "Rolling out a rule
	// engine"). 0 is shadow mode. Requires ShadowMatcher when above 0.
	MatcherRolloutPercent int
	// DLQEnabled sends failures to the dead-letter queue (spec rollout flag).
	DLQEnabled bool
	// ReputationRefresh is how often cached source reputations are reloaded.
	ReputationRefresh time.Duration
	// Duplicates configures duplicate detection (windows, the content
	// duplicate policy).
	Duplicates dedup.Config
	// Canonical says which URL parts do not identify an article.
	Canonical canonical.Config
	// CopyRawHTML copies raw_html into the classified document
	// (CLASSIFIER_COPY_RAW_HTML, off by default).
	CopyRawHTML bool
	// ReprocessPageSize is the most documents a reprocess task sets back
	// per page (CLASSIFIER_REPROCESS_PAGE_SIZE): one search, one bulk and
	// one progress write, after which a cancel request is seen.
	ReprocessPageSize int

	// Warnings are settings loadConfig accepted that an operator should
	// hear about; serve logs each once its logger exists.
	Warnings []configWarning
}

// configWarning is a setting accepted with a caveat: a log message and its
// attributes (slog key-value pairs).
type configWarning struct {
	msg   string
	attrs []any
}

// MaxStallsDefault is CLASSIFIER_MAX_STALLS: a document whose lease expired
// without a commit this many times is dead-lettered as STALLED.
const MaxStallsDefault = 3

func loadConfig(l *config.Loader) (Config, error) {
	host, _ := os.Hostname()
	replica := l.String("CLASSIFIER_ID", fmt.Sprintf("%s-%d", host, os.Getpid()))
	c := Config{
		Common:   service.LoadCommon(l, "classifier", "CLASSIFIER_HTTP_ADDR", ":8071"),
		DB:       postgres.ConfigFromEnv(l, "CLASSIFIER_DATABASE_URL"),
		OutboxDB: postgres.ConfigFromEnv(l, "CLASSIFIER_OUTBOX_DATABASE_URL"),
		ES:       esclient.ConfigFromEnv(l),
		Poller: poller.Config{
			ReplicaID:    replica,
			IndexPattern: l.String("CLASSIFIER_INDEX_PATTERN", poller.IndexPatternDefault),
			PollInterval: l.Duration("CLASSIFIER_POLL_INTERVAL", poller.PollIntervalDefault),
			BatchSize:    l.PositiveInt("CLASSIFIER_BATCH_SIZE", poller.BatchSizeDefault),
			BacklogShare: backlogShare(l.Fraction("CLASSIFIER_BACKLOG_SHARE", poller.BacklogShareDefault)),
			RecencyScale: l.Duration("CLASSIFIER_PRIORITY_RECENCY_SCALE", poller.RecencyScaleDefault),
		},
		ClaimLease: l.Duration("CLASSIFIER_CLAIM_LEASE", lease.LeaseDefault),
		Heartbeat: claim.HeartbeatConfig{
			ReplicaID: replica,
			Interval:  l.Duration("CLASSIFIER_CLAIM_HEARTBEAT", claim.IntervalDefault),
		},
		Limits: admission.Limits{
			MaxDocumentBytes: l.PositiveInt("CLASSIFIER_MAX_DOCUMENT_BYTES", admission.MaxDocumentBytesDefault),
			MaxURLBytes:      l.PositiveInt("CLASSIFIER_MAX_URL_BYTES", admission.MaxURLBytesDefault),
			MaxTitleBytes:    l.PositiveInt("CLASSIFIER_MAX_TITLE_BYTES", admission.MaxTitleBytesDefault),
		},
		Store: storage.StoreConfig{
			MaxBulkBytes: l.PositiveInt("CLASSIFIER_MAX_BULK_BYTES", storage.MaxBulkBytesDefault),
		},
		Processor: processor.BatchProcessorConfig{
			Concurrency:   l.PositiveInt("CLASSIFIER_CONCURRENCY", processor.ConcurrencyDefault),
			MaxQueueDepth: l.PositiveInt("CLASSIFIER_MAX_QUEUE_DEPTH", processor.MaxQueueDepthDefault),
			SubmitTimeout: l.Duration("CLASSIFIER_SUBMIT_TIMEOUT", processor.SubmitTimeoutDefault),
		},
		Committer: processor.CommitterConfig{
			Batch:  l.PositiveInt("CLASSIFIER_COMMIT_BATCH", processor.CommitBatchDefault),
			Linger: processor.CommitLingerDefault,
		},
		Retry: deadletter.RetryConfig{
			ReplicaID: replica,
			Interval:  l.Duration("CLASSIFIER_DLQ_RETRY_INTERVAL", deadletter.RetryIntervalDefault),
			Batch:     deadletter.RetryBatchDefault,
			Lease:     deadletter.RetryLeaseDefault,
			// One bad source cannot spend the retries of all the others.
			SourceBudget: l.PositiveInt("CLASSIFIER_DLQ_SOURCE_RETRY_BUDGET", deadletter.SourceBudgetDefault),
			BudgetWindow: l.Duration("CLASSIFIER_DLQ_SOURCE_RETRY_WINDOW", deadletter.BudgetWindowDefault),
		},
		DeadLetters: deadletter.RepositoryConfig{
			PermanentAfter: l.PositiveInt("CLASSIFIER_DLQ_PERMANENT_AFTER", deadletter.PermanentAfterDefault),
		},
		DLQEnabled:        l.Bool("CLASSIFIER_DLQ_ENABLED", true),
		ReputationRefresh: l.Duration("CLASSIFIER_REPUTATION_REFRESH", 30*time.Second),
	}
	c.Matcher = matcherKind(l, "CLASSIFIER_RULE_MATCHER", string(rules.MatcherAhoCorasick))
	if w := useTrieEngine(l, &c.Matcher); w != nil {
		c.Warnings = append(c.Warnings, *w)
	}
	c.RuleOptions.Stemming = l.Bool("CLASSIFIER_RULE_STEMMING", rules.StemmingDefault)
	scoring := l.OneOf("CLASSIFIER_RULE_SCORING", string(rules.ScoringDefault), string(rules.ScoringMinKeywords), string(rules.ScoringSpec))
	c.RuleOptions.Scoring, _ = rules.ParseScoring(scoring)
	if s := l.String("CLASSIFIER_SHADOW_MATCHER", ""); s != "" {
		c.ShadowMatcher = matcherKind(l, "CLASSIFIER_SHADOW_MATCHER", "")
	}
	c.MatcherRolloutPercent = l.Int("CLASSIFIER_MATCHER_ROLLOUT_PERCENT", 0)
	l.Check("CLASSIFIER_MATCHER_ROLLOUT_PERCENT", c.MatcherRolloutPercent >= 0 && c.MatcherRolloutPercent <= 100,
		fmt.Sprintf("must be 0..100 (got %d)", c.MatcherRolloutPercent))
	l.Check("CLASSIFIER_MATCHER_ROLLOUT_PERCENT", c.MatcherRolloutPercent == 0 || c.ShadowMatcher != "",
		"needs CLASSIFIER_SHADOW_MATCHER: the candidate matcher the share of documents goes to")
	c.Poller.MaxStalls = l.Int("CLASSIFIER_MAX_STALLS", MaxStallsDefault)
	l.Check("CLASSIFIER_MAX_STALLS", c.Poller.MaxStalls >= 0, fmt.Sprintf("must be 0 (never) or more (got %d)", c.Poller.MaxStalls))
	c.CopyRawHTML = l.Bool("CLASSIFIER_COPY_RAW_HTML", false)
	c.ReprocessPageSize = l.PositiveInt("CLASSIFIER_REPROCESS_PAGE_SIZE", reprocess.PageSizeDefault)
	l.Check("CLASSIFIER_REPROCESS_PAGE_SIZE", c.ReprocessPageSize <= 10000,
		fmt.Sprintf("must be at most 10000, Elasticsearch's largest page (got %d)", c.ReprocessPageSize))
	c.Poller.ReadRawHTML = c.CopyRawHTML
	c.UrgentEnabled = l.Bool("CLASSIFIER_URGENT_QUEUE_ENABLED", true)
	c.Urgent = processor.BatchProcessorConfig{
		Concurrency:   l.PositiveInt("CLASSIFIER_URGENT_WORKERS", 2),
		MaxQueueDepth: l.PositiveInt("CLASSIFIER_URGENT_QUEUE_DEPTH", 50),
	}
	c.Duplicates = dedup.Config{
		URLWindow:     l.Duration("CLASSIFIER_DUPLICATE_URL_WINDOW", dedup.DefaultURLWindow),
		ContentWindow: l.Duration("CLASSIFIER_DUPLICATE_CONTENT_WINDOW", dedup.DefaultContentWindow),
	}
	policy := l.OneOf("CLASSIFIER_DUPLICATE_CONTENT_POLICY", string(dedup.Flag), string(dedup.Flag), string(dedup.Skip))
	c.Duplicates.ContentPolicy, _ = dedup.ParsePolicy(policy)
	c.Canonical.TrackingParams = trackingParams(l.String("CLASSIFIER_TRACKING_PARAMS", ""))
	l.Check("CLASSIFIER_ID", utf8.ValidString(replica) && len(replica) <= 200 && !strings.ContainsFunc(replica, unicode.IsControl),
		"must be at most 200 bytes of UTF-8 without control characters (it is part of every claim id)")
	l.Check("CLASSIFIER_CLAIM_HEARTBEAT", c.Heartbeat.Interval*2 <= c.ClaimLease,
		fmt.Sprintf("must be at most half of CLASSIFIER_CLAIM_LEASE (%s), so a claim is renewed before it expires (got %s)", c.ClaimLease, c.Heartbeat.Interval))
	l.Check("CLASSIFIER_BATCH_SIZE", c.Poller.BatchSize <= 1000, fmt.Sprintf("must be at most 1000 (got %d)", c.Poller.BatchSize))
	l.Check("CLASSIFIER_DLQ_SOURCE_RETRY_WINDOW", c.Retry.BudgetWindow >= time.Minute && c.Retry.BudgetWindow <= 24*time.Hour,
		fmt.Sprintf("must be from 1m to 24h (got %s)", c.Retry.BudgetWindow))
	policies, err := deadletter.ParsePolicies(l.String("CLASSIFIER_DLQ_RETRY_POLICY", ""))
	l.Check("CLASSIFIER_DLQ_RETRY_POLICY", err == nil, fmt.Sprint(err))
	c.DeadLetters.Policies = policies
	l.Check("CLASSIFIER_DLQ_PERMANENT_AFTER", c.DeadLetters.PermanentAfter >= 2 && c.DeadLetters.PermanentAfter <= 1000,
		fmt.Sprintf("must be 2..1000 (got %d)", c.DeadLetters.PermanentAfter))
	l.Check("CLASSIFIER_COMMIT_BATCH", c.Committer.Batch <= 2000, fmt.Sprintf("must be at most 2000 (got %d)", c.Committer.Batch))
	return c, l.Err()
}

// backlogShare maps CLASSIFIER_BACKLOG_SHARE onto poller.Config: 0 there
// means its default, so "0" (oldest first, no priorities) becomes -1.
func backlogShare(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}

// trackingParams reads CLASSIFIER_TRACKING_PARAMS: empty means the
// default list, "none" no parameter, otherwise comma-separated names (a
// trailing * makes a prefix).
func trackingParams(v string) []string {
	switch strings.TrimSpace(v) {
	case "":
		return nil
	case "none":
		return []string{}
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// useTrieEngine applies CLASSIFIER_USE_TRIE_ENGINE to matcher. The original
// design names that variable as the rule engine's rollout flag, so it is
// kept, as a deprecated alias of CLASSIFIER_RULE_MATCHER: false means the
// naive matcher and wins, being the design's rollback; true leaves the
// matcher to CLASSIFIER_RULE_MATCHER (both of its trie matchers agree with
// it). When both variables are set and disagree, the warning says which
// matcher runs.
func useTrieEngine(l *config.Loader, matcher *rules.MatcherKind) *configWarning {
	const alias, successor = "CLASSIFIER_USE_TRIE_ENGINE", "CLASSIFIER_RULE_MATCHER"
	if l.String(alias, "") == "" {
		return nil // unset: the matcher is CLASSIFIER_RULE_MATCHER's
	}
	trie := l.Bool(alias, true)
	named := *matcher
	if !trie {
		*matcher = rules.MatcherNaive
	}
	if l.String(successor, "") == "" || (named != rules.MatcherNaive) == trie {
		return nil
	}
	return &configWarning{
		msg:   alias + " is deprecated and disagrees with " + successor + "; set only " + successor,
		attrs: []any{"use_trie_engine", trie, "rule_matcher", string(named), "matcher", string(*matcher)},
	}
}

func matcherKind(l *config.Loader, name, def string) rules.MatcherKind {
	v := l.OneOf(name, def, string(rules.MatcherAhoCorasick), string(rules.MatcherTokenIndex), string(rules.MatcherNaive))
	k, _ := rules.ParseMatcherKind(v)
	return k
}
