package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/canonical"
	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/dedup"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/modelstore"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/classifier/internal/processor"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/republish"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/sourcepriority"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/service"
)

// The parts of the running classifier, each built by one step of serve
// from the parts built before it. A part that reports a gauge registers it
// where it is built, reading only what it holds.

// connections are the classifier's dependencies: its own database
// (migrated at start), the publisher's (the outbox, INSERT only) and
// Elasticsearch.
type connections struct {
	db     *sql.DB
	outbox *sql.DB
	es     *esclient.Client
}

func connect(ctx context.Context, cfg Config, log *slog.Logger) (*connections, error) {
	db, err := postgres.OpenMigrated(ctx, cfg.DB, migrations.FS, log)
	if err != nil {
		return nil, err
	}
	outboxDB, err := postgres.Open(ctx, cfg.OutboxDB, log)
	if err != nil {
		db.Close()
		return nil, err
	}
	es, err := contentindex.Connect(ctx, cfg.ES, log)
	if err != nil {
		outboxDB.Close()
		db.Close()
		return nil, err
	}
	return &connections{db: db, outbox: outboxDB, es: es}, nil
}

// close closes the databases, the last opened first.
func (c *connections) close() {
	c.outbox.Close()
	c.db.Close()
}

// guards are one circuit breaker per dependency: while one is open, the
// work that needs it pauses (no claims, no dead-letter retries, commits
// held) and the monitor probes it until it answers again. They report
// classifier_breaker_state.
type guards struct {
	processor.Breakers
	all     []*breaker.Breaker
	monitor *breaker.Monitor
}

func guard(c *connections, metrics *telemetry.Metrics, log *slog.Logger) (*guards, error) {
	onChange := func(name string, from, to breaker.State, cause error) {
		if to == breaker.Open && from == breaker.Closed {
			log.Error("dependency unavailable: circuit breaker open, work that needs it paused", "dependency", name, "error", cause)
		} else if to == breaker.Closed {
			log.Info("dependency answers again: circuit breaker closed, work resumed", "dependency", name)
		}
	}
	b := processor.Breakers{
		Elasticsearch: breaker.MustNew(breaker.Config{Name: "elasticsearch", OnChange: onChange}),
		Postgres:      breaker.MustNew(breaker.Config{Name: "postgres", OnChange: onChange}),
		Outbox:        breaker.MustNew(breaker.Config{Name: "outbox_postgres", OnChange: onChange}),
	}
	g := &guards{Breakers: b, all: []*breaker.Breaker{b.Elasticsearch, b.Postgres, b.Outbox},
		monitor: breaker.NewMonitor(0, 0, log,
			breaker.Guarded{Breaker: b.Elasticsearch, Ping: esclient.Ping(c.es)},
			breaker.Guarded{Breaker: b.Postgres, Ping: postgres.Ping(c.db)},
			breaker.Guarded{Breaker: b.Outbox, Ping: postgres.Ping(c.outbox)},
		)}
	if err := metrics.Observe(telemetry.Gauges{BreakerStates: g.states}); err != nil {
		return nil, fmt.Errorf("guard dependencies: %w", err)
	}
	return g, nil
}

// states is each breaker's state by dependency.
func (g *guards) states() map[string]int64 {
	out := make(map[string]int64, len(g.all))
	for _, b := range g.all {
		out[b.Name()] = int64(b.State())
	}
	return out
}

// openDeadLetters returns the dead-letter queue (permanent failures), which
// reports classifier_dlq_depth and classifier_dlq_backlog.
func openDeadLetters(db *sql.DB, cfg deadletter.RepositoryConfig, metrics *telemetry.Metrics, log *slog.Logger) (*deadletter.Repository, error) {
	cfg.Metrics, cfg.Logger = metrics, log
	dlq, err := deadletter.NewRepositoryWith(db, cfg)
	if err != nil {
		return nil, err
	}
	err = metrics.Observe(telemetry.Gauges{
		DLQDepth: dlq.CountBySource,
		DLQBacklog: func(ctx context.Context) (int64, int64, error) {
			s, err := dlq.GetStats(ctx)
			if err != nil {
				return 0, 0, err
			}
			return s.Pending, s.Exhausted, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("open dead letters: %w", err)
	}
	return dlq, nil
}

// ruleSet is what decides a document's topics: the rule engine (and its
// shadow, when one is configured) and the topic models, kept current from
// the database by the watcher.
type ruleSet struct {
	engine  *rules.Engine
	topics  pipeline.TopicMatcher // the engine, or the shadow pair
	repo    *rulestore.Repository
	watcher *rulestore.Watcher
	// Topic models: the shipped lexicon (base) until a trained model is
	// active; the models in use are reloaded with the rules.
	base      *topicmodel.Scorer
	models    *modelstore.Models
	modelRepo *modelstore.Repository
}

// loadRules builds the rules and models. The engine starts empty; the
// watcher loads the enabled rules before any document is classified and
// keeps them current (modelstore.Reloader).
func loadRules(ctx context.Context, cfg Config, db *sql.DB, rt *service.Runtime, metrics *telemetry.Metrics, log *slog.Logger) (*ruleSet, error) {
	engineOptions := func(kind rules.MatcherKind) rules.Options {
		o := cfg.RuleOptions
		o.Matcher = kind
		return o
	}
	engine, err := rules.NewEngineWithOptions(engineOptions(cfg.Matcher), nil)
	if err != nil {
		return nil, err
	}
	rs := &ruleSet{engine: engine, topics: engine, repo: rulestore.NewRepository(db), modelRepo: modelstore.NewRepository(db)}
	var updater rulestore.Updater = engine
	if cfg.ShadowMatcher != "" {
		shadowEngine, err := rules.NewEngineWithOptions(engineOptions(cfg.ShadowMatcher), nil)
		if err != nil {
			return nil, err
		}
		shadow, err := rules.NewShadow(engine, shadowEngine, rules.ShadowConfig{Epsilon: -1,
			RolloutPercent: cfg.MatcherRolloutPercent, OnCompare: metrics.ShadowComparison(ctx, log)})
		if err != nil {
			return nil, err
		}
		rs.topics, updater = shadow, shadow
	}
	if rs.base, err = pipeline.DefaultModel(); err != nil {
		return nil, err
	}
	if rs.models, err = modelstore.NewModels(rs.base, topicmodel.MatcherDefault); err != nil {
		return nil, err
	}
	reloader := &modelstore.Reloader{Rules: rs.repo, Target: updater, Repo: rs.modelRepo, Models: rs.models, Logger: log,
		OnUnusable: metrics.ModelUnusableHook(ctx)}
	rs.watcher, err = rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: cfg.DB.URL, Meter: rt.Telemetry.Meter("classifier")},
		reloader, reloader, log)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// classification is the pipeline every worker runs, and the source
// reputations it reads (cached, refreshed in the background).
type classification struct {
	pipeline        *pipeline.Pipeline
	reputation      *reputation.Repository
	reputationCache *reputation.Cache
}

func newClassification(ctx context.Context, cfg Config, db *sql.DB, rs *ruleSet, metrics *telemetry.Metrics, log *slog.Logger) (*classification, error) {
	repo := reputation.NewRepository(db)
	cache := reputation.NewCache(repo, cfg.ReputationRefresh, log)
	p, err := pipeline.New(pipeline.Config{
		Limits:        cfg.Limits,
		Topics:        rs.topics,
		Model:         rs.models.For,
		OnModelShadow: metrics.ModelShadow(ctx, log),
		Reputation:    cache.Score,
		RuleCount:     rs.engine.RuleCount,
		OnRuleMatch:   metrics.RecordRuleMatch,
		Canonical:     canonical.New(cfg.Canonical),
		CopyRawHTML:   cfg.CopyRawHTML,
	})
	if err != nil {
		return nil, err
	}
	return &classification{pipeline: p, reputation: repo, reputationCache: cache}, nil
}

// processing is where claimed documents go: the worker pools, the
// committer behind them, and what both keep of the claims. It reports
// classifier_queue_depth.
type processing struct {
	raw       *rawindex.Store
	leases    *lease.Store
	claims    *claim.Registry
	hygiene   *processor.Hygiene
	committer *processor.Committer
	main      *processor.BatchProcessor
	// urgent is the pool of urgent documents (fresh news): a small queue
	// and workers of their own, so they never wait behind a full queue of
	// backlog; nil when CLASSIFIER_URGENT_QUEUE_ENABLED=false.
	urgent *processor.BatchProcessor
	// sink and urgentSink are what the poller and the retries submit to.
	// Every document a pool accepts is tracked until its commit, so the
	// heartbeat renews its claim while it is in flight; the poller holds
	// off while claims wait longer than a quarter of a beat
	// (claim.TrackingSink). The urgent lane is paced like the main one:
	// while claims wait, the pipeline behind both queues is behind, and more
	// urgent claims would only wait too.
	sink, urgentSink claim.TrackingSink
}

func newProcessing(cfg Config, c *connections, g *guards, dlq *deadletter.Repository, cl *classification,
	metrics *telemetry.Metrics, tracer trace.Tracer, log *slog.Logger) (*processing, error) {
	p := &processing{claims: claim.NewRegistry()}
	p.hygiene = &processor.Hygiene{Duplicates: dedup.New(c.db, cfg.Duplicates), Outcomes: republish.New(c.db)}
	var err error
	if p.leases, err = lease.New(lease.Config{DB: c.db, Replica: cfg.Poller.ReplicaID, Lease: cfg.ClaimLease}); err != nil {
		return nil, err
	}
	// Every read and write of raw documents goes through raw, bounded like
	// the classified writes (CLASSIFIER_MAX_BULK_BYTES).
	if p.raw, err = rawindex.New(rawindex.Config{ES: c.es, MaxBulkBytes: cfg.Store.MaxBulkBytes, Logger: log}); err != nil {
		return nil, err
	}
	stores := processor.Stores{
		Content:    storage.NewContentStoreWith(c.es, cfg.Store),
		Raw:        p.raw,
		History:    storage.NewHistoryRepository(c.db),
		Outbox:     storage.NewOutboxWriter(c.outbox, log),
		Reputation: cl.reputation,
		Claims:     p.claims,
		Leases:     p.leases,
		Hygiene:    p.hygiene,
	}
	if cfg.DLQEnabled {
		stores.DeadLetters = dlq
	}
	p.committer = processor.NewCommitter(cfg.Committer, stores, g.Breakers, metrics, tracer, log)
	p.main = processor.NewBatchProcessor(cfg.Processor, cl.pipeline, p.committer.Output(), metrics, tracer, log)
	pace := cfg.Heartbeat.Interval / 4
	p.sink = claim.TrackingSink{Sink: p.main, Registry: p.claims, Pace: pace}
	gauges := telemetry.Gauges{QueueDepth: func() int64 { return int64(p.main.QueueDepth()) }}
	if cfg.UrgentEnabled {
		urgent := cfg.Urgent
		urgent.SubmitTimeout = cfg.Processor.SubmitTimeout
		p.urgent = processor.NewBatchProcessor(urgent, cl.pipeline, p.committer.UrgentOutput(), metrics, tracer, log.With("queue", "urgent"))
		p.urgentSink = claim.TrackingSink{Sink: p.urgent, Registry: p.claims, Pace: pace}
		gauges.UrgentQueueDepth = func() int64 { return int64(p.urgent.QueueDepth()) }
	}
	if err := metrics.Observe(gauges); err != nil {
		return nil, fmt.Errorf("new processing: %w", err)
	}
	return p, nil
}

// duplicateCleanup forgets the duplicate windows, and the published
// outcomes they outlive, as they expire.
func (p *processing) duplicateCleanup(log *slog.Logger) *lifecycle.Loop {
	return &lifecycle.Loop{Name: "duplicate_cleanup", Logger: log,
		Step: func(ctx context.Context) time.Duration {
			n, err := p.hygiene.Cleanup(ctx, 10_000)
			if err != nil {
				log.WarnContext(ctx, "duplicate windows not cleaned up; tried again later", "error", err)
				return 10 * time.Minute
			}
			if n > 0 {
				log.InfoContext(ctx, "duplicate windows cleaned up", "rows", n)
				return time.Second // more may be waiting
			}
			return 10 * time.Minute
		}}
}

// feed is what hands documents to the processing: the poller, with the
// source priorities it orders them by and the heartbeat that renews their
// claims, and the dead-letter retries.
type feed struct {
	priorityStore *sourcepriority.Store
	priorities    *sourcepriority.Cache
	heartbeat     *claim.Heartbeat
	poller        *poller.Poller
	retrier       *deadletter.RetryWorker // nil when the DLQ is off
}

func newFeed(cfg Config, c *connections, g *guards, dlq *deadletter.Repository, p *processing,
	metrics *telemetry.Metrics, tracer trace.Tracer, log *slog.Logger) (*feed, error) {
	f := &feed{}
	var err error
	if f.priorityStore, err = sourcepriority.New(sourcepriority.Config{DB: c.db, Raw: p.raw}); err != nil {
		return nil, err
	}
	f.priorities = sourcepriority.NewCache(f.priorityStore, 0, log)
	if f.heartbeat, err = claim.NewHeartbeat(cfg.Heartbeat, p.claims, p.leases, log); err != nil {
		return nil, err
	}
	pc := cfg.Poller
	pc.SourcePriority = f.priorities.Level
	pc.Breakers, pc.ESBreaker = g.all, g.Elasticsearch
	pc.Leases, pc.Raw = p.leases, p.raw
	if p.urgent != nil {
		pc.Urgent = p.urgentSink
	}
	if f.poller, err = poller.New(pc, p.sink, metrics, tracer, log); err != nil {
		return nil, err
	}
	if cfg.DLQEnabled {
		rc := cfg.Retry
		rc.Breakers, rc.Leases = g.all, p.leases
		if f.retrier, err = deadletter.NewRetryWorker(rc, dlq, p.raw, p.sink, log); err != nil {
			return nil, err
		}
	}
	return f, nil
}
