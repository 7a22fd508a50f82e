// Command classifier polls raw content, classifies it and hands it to the
// publisher through the outbox.
//
//	classifier [serve]              run the service
//	classifier migrate up|down [N]|version
//	classifier eval [flags] LABELS.ndjson
//	classifier sweep [-index PATTERN] [-quarantine] [-limit N] [-json]
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/canonical"
	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/dedup"
	"github.com/north-cloud/classifier/internal/labels"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/modelapi"
	"github.com/north-cloud/classifier/internal/modelstore"
	"github.com/north-cloud/classifier/internal/opsapi"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/classifier/internal/processor"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/reprocess"
	"github.com/north-cloud/classifier/internal/republish"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/sourcepriority"
	"github.com/north-cloud/classifier/internal/sourcestats"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/service"
)

func main() {
	service.Main("serve", map[string]service.Command{
		"serve":   serve,
		"migrate": service.MigrateCommand("classifier", "CLASSIFIER_DATABASE_URL", migrations.FS),
		"eval":    evalCommand,
		"train":   trainCommand,
		"sweep":   sweepCommand,
	})
}

func serve(ctx context.Context, _ []string) error {
	cfg, err := loadConfig(config.New())
	if err != nil {
		return err
	}
	rt, err := service.NewRuntime(ctx, cfg.Common, os.Stderr)
	if err != nil {
		return err
	}
	log := rt.Logger
	defer func() { _ = rt.Telemetry.Shutdown(context.Background()) }()
	log.InfoContext(ctx, "starting classifier", "http_addr", cfg.HTTP.Addr, "replica", cfg.Poller.ReplicaID,
		"database", postgres.Redact(cfg.DB.URL), "outbox_database", postgres.Redact(cfg.OutboxDB.URL),
		"elasticsearch", esclient.Redact(cfg.ES.URL), "index_pattern", cfg.Poller.IndexPattern, "matcher", cfg.Matcher,
		"shadow_matcher", cfg.ShadowMatcher, "matcher_rollout_percent", cfg.MatcherRolloutPercent, "dlq_enabled", cfg.DLQEnabled, "workers", cfg.Processor.Concurrency,
		"max_queue_depth", cfg.Processor.MaxQueueDepth, "auth", cfg.Auth.String())

	db, err := postgres.OpenMigrated(ctx, cfg.DB, migrations.FS, log)
	if err != nil {
		return err
	}
	defer db.Close()
	outboxDB, err := postgres.Open(ctx, cfg.OutboxDB, log)
	if err != nil {
		return err
	}
	defer outboxDB.Close()
	es, err := contentindex.Connect(ctx, cfg.ES, log)
	if err != nil {
		return err
	}

	// One circuit breaker per dependency: while one is open, the work that
	// needs it pauses (no claims, no dead-letter retries, commits held) and
	// the monitor probes it until it answers again.
	breakerLog := func(name string, from, to breaker.State, cause error) {
		if to == breaker.Open && from == breaker.Closed {
			log.Error("dependency unavailable: circuit breaker open, work that needs it paused", "dependency", name, "error", cause)
		} else if to == breaker.Closed {
			log.Info("dependency answers again: circuit breaker closed, work resumed", "dependency", name)
		}
	}
	breakers := processor.Breakers{
		Elasticsearch: breaker.MustNew(breaker.Config{Name: "elasticsearch", OnChange: breakerLog}),
		Postgres:      breaker.MustNew(breaker.Config{Name: "postgres", OnChange: breakerLog}),
		Outbox:        breaker.MustNew(breaker.Config{Name: "outbox_postgres", OnChange: breakerLog}),
	}
	allBreakers := []*breaker.Breaker{breakers.Elasticsearch, breakers.Postgres, breakers.Outbox}
	monitor := breaker.NewMonitor(0, 0, log,
		breaker.Guarded{Breaker: breakers.Elasticsearch, Ping: esclient.Ping(es)},
		breaker.Guarded{Breaker: breakers.Postgres, Ping: postgres.Ping(db)},
		breaker.Guarded{Breaker: breakers.Outbox, Ping: postgres.Ping(outboxDB)},
	)

	var dlq *deadletter.Repository
	var proc, urgentProc *processor.BatchProcessor
	gauges := telemetry.Gauges{
		QueueDepth: func() int64 { return int64(proc.QueueDepth()) },
		DLQDepth:   func(ctx context.Context) (map[string]int64, error) { return dlq.CountBySource(ctx) },
		DLQBacklog: func(ctx context.Context) (int64, int64, error) {
			s, err := dlq.GetStats(ctx)
			if err != nil {
				return 0, 0, err
			}
			return s.Pending, s.Exhausted, nil
		},
		BreakerStates: func() map[string]int64 {
			out := make(map[string]int64, len(allBreakers))
			for _, b := range allBreakers {
				out[b.Name()] = int64(b.State())
			}
			return out
		},
	}
	if cfg.UrgentEnabled {
		gauges.UrgentQueueDepth = func() int64 { return int64(urgentProc.QueueDepth()) }
	}
	metrics, err := telemetry.New(rt.Telemetry.Meter("classifier"), gauges)
	if err != nil {
		return fmt.Errorf("classifier metrics: %w", err)
	}
	tracer := rt.Telemetry.Tracer("classifier")
	cfg.DeadLetters.Metrics, cfg.DeadLetters.Logger = metrics, log
	if dlq, err = deadletter.NewRepositoryWith(db, cfg.DeadLetters); err != nil {
		return err
	}

	// Rules: the engine starts empty; the watcher loads the enabled rules
	// before any document is classified and keeps them current.
	engineOptions := func(kind rules.MatcherKind) rules.Options {
		o := cfg.RuleOptions
		o.Matcher = kind
		return o
	}
	engine, err := rules.NewEngineWithOptions(engineOptions(cfg.Matcher), nil)
	if err != nil {
		return err
	}
	var topics pipeline.TopicMatcher = engine
	var updater rulestore.Updater = engine
	if cfg.ShadowMatcher != "" {
		shadowEngine, err := rules.NewEngineWithOptions(engineOptions(cfg.ShadowMatcher), nil)
		if err != nil {
			return err
		}
		shadow, err := rules.NewShadow(engine, shadowEngine, rules.ShadowConfig{Epsilon: -1,
			RolloutPercent: cfg.MatcherRolloutPercent, OnCompare: metrics.ShadowComparison(ctx, log)})
		if err != nil {
			return err
		}
		topics, updater = shadow, shadow
	}
	ruleRepo := rulestore.NewRepository(db)
	// Topic models: the shipped lexicon until a trained model is active;
	// the models in use are reloaded with the rules (modelstore.Reloader).
	defaultModel, err := pipeline.DefaultModel()
	if err != nil {
		return err
	}
	models, err := modelstore.NewModels(defaultModel, topicmodel.MatcherDefault)
	if err != nil {
		return err
	}
	modelRepo := modelstore.NewRepository(db)
	reloader := &modelstore.Reloader{Rules: ruleRepo, Target: updater, Repo: modelRepo, Models: models, Logger: log,
		OnUnusable: metrics.ModelUnusableHook(ctx)}
	watcher, err := rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: cfg.DB.URL, Meter: rt.Telemetry.Meter("classifier")},
		reloader, reloader, log)
	if err != nil {
		return err
	}

	repRepo := reputation.NewRepository(db)
	repCache := reputation.NewCache(repRepo, cfg.ReputationRefresh, log)
	classifier, err := pipeline.New(pipeline.Config{
		Limits:        cfg.Limits,
		Topics:        topics,
		Model:         models.For,
		OnModelShadow: metrics.ModelShadow(ctx, log),
		Reputation:    repCache.Score,
		RuleCount:     engine.RuleCount,
		OnRuleMatch:   metrics.RecordRuleMatch,
		Canonical:     canonical.New(cfg.Canonical),
		CopyRawHTML:   cfg.CopyRawHTML,
	})
	if err != nil {
		return err
	}

	duplicates := dedup.New(db, cfg.Duplicates)
	hygiene := &processor.Hygiene{Duplicates: duplicates, Outcomes: republish.New(db)}
	claims := claim.NewRegistry()
	leases, err := lease.New(lease.Config{DB: db, Replica: cfg.Poller.ReplicaID, Lease: cfg.Poller.ClaimLease})
	if err != nil {
		return err
	}
	// Every read and write of raw documents goes through raw, bounded like
	// the classified writes (CLASSIFIER_MAX_BULK_BYTES).
	raw, err := rawindex.New(rawindex.Config{ES: es, MaxBulkBytes: cfg.Store.MaxBulkBytes, Logger: log})
	if err != nil {
		return err
	}
	stores := processor.Stores{
		Content:    storage.NewContentStoreWith(es, cfg.Store),
		Raw:        raw,
		History:    storage.NewHistoryRepository(db),
		Outbox:     storage.NewOutboxWriter(outboxDB),
		Reputation: repRepo,
		Claims:     claims,
		Leases:     leases,
		Hygiene:    hygiene,
	}
	if cfg.DLQEnabled {
		stores.DeadLetters = dlq
	}
	committer := processor.NewCommitter(cfg.Committer, stores, breakers, metrics, tracer, log)
	proc = processor.NewBatchProcessor(cfg.Processor, classifier, committer.Output(), metrics, tracer, log)
	// Every document the pool accepts is tracked until its commit, so the
	// heartbeat renews its claim while it is in flight; the poller holds off
	// while claims wait longer than a quarter of a beat (claim.TrackingSink).
	sink := claim.TrackingSink{Sink: proc, Registry: claims, Pace: cfg.Heartbeat.Interval / 4}
	// Urgent documents (fresh news) get a small queue and workers of their
	// own, so they never wait behind a full queue of backlog
	// (CLASSIFIER_URGENT_QUEUE_ENABLED=false turns that lane off).
	if cfg.UrgentEnabled {
		cfg.Urgent.SubmitTimeout = cfg.Processor.SubmitTimeout
		urgentProc = processor.NewBatchProcessor(cfg.Urgent, classifier, committer.UrgentOutput(), metrics, tracer, log.With("queue", "urgent"))
		// Paced like the main queue: while claims wait, the pipeline behind
		// both queues is behind, and more urgent claims would only wait too.
		cfg.Poller.Urgent = claim.TrackingSink{Sink: urgentProc, Registry: claims, Pace: cfg.Heartbeat.Interval / 4}
	}
	priorityStore, err := sourcepriority.New(sourcepriority.Config{DB: db, Raw: raw})
	if err != nil {
		return err
	}
	priorities := sourcepriority.NewCache(priorityStore, 0, log)
	cfg.Poller.SourcePriority = priorities.Level
	heartbeat, err := claim.NewHeartbeat(cfg.Heartbeat, claims, leases, log)
	if err != nil {
		return err
	}
	cfg.Poller.Breakers = allBreakers
	cfg.Poller.ESBreaker = breakers.Elasticsearch
	cfg.Poller.Leases = leases
	cfg.Poller.Raw = raw
	poll, err := poller.New(cfg.Poller, sink, metrics, tracer, log)
	if err != nil {
		return err
	}

	srv, err := rt.HTTPServer(cfg.HTTP,
		httpserver.ReadyCheck{Name: "postgres", Check: postgres.Ping(db)},
		httpserver.ReadyCheck{Name: "outbox_postgres", Check: postgres.Ping(outboxDB)},
		httpserver.ReadyCheck{Name: "elasticsearch", Check: esclient.Ping(es)},
		httpserver.ReadyCheck{Name: "elasticsearch_breaker", Check: breakers.Elasticsearch.Ready},
		httpserver.ReadyCheck{Name: "postgres_breaker", Check: breakers.Postgres.Ready},
		httpserver.ReadyCheck{Name: "outbox_postgres_breaker", Check: breakers.Outbox.Ready},
		// One failing raw index does not make the service unready (the
		// others flow); /ready names it in its details.
		httpserver.ReadyCheck{Name: "raw_indices", Advisory: true, Check: func(context.Context) error { return poller.Failing(poll.IndexStatus()) }},
		// A stored rule set over the cost budget is refused (the engine keeps
		// the last good set); /ready names it without making the service unready.
		httpserver.ReadyCheck{Name: "rules_budget", Advisory: true, Check: watcher.BudgetCheck},
	)
	if err != nil {
		return err
	}
	sourceStats, err := sourcestats.New(sourcestats.Config{ES: es, DB: db, RawPattern: cfg.Poller.IndexPattern})
	if err != nil {
		return err
	}
	// Reprocess requests run in the background on the replica that took
	// them; the runner starts before the HTTP server takes requests.
	reprocessor, err := reprocess.New(reprocess.Config{Raw: raw, DB: db, ReplicaID: cfg.Poller.ReplicaID, Logger: log, Metrics: metrics,
		PageSize: cfg.ReprocessPageSize})
	if err != nil {
		return err
	}
	auditLog, err := audit.NewStore(db)
	if err != nil {
		return err
	}
	labelStore := labels.NewStore(db)
	labelFinder, err := labels.NewFinder(labels.FinderConfig{ES: es, Pattern: labels.ClassifiedPattern(cfg.Poller.IndexPattern)})
	if err != nil {
		return err
	}
	// The playground runs on the active engine only, so its requests are
	// not counted as shadow-mode comparisons.
	if err := mountAPI(srv.Router(),
		audit.GroupConfig{Auth: rt.Auth, Store: auditLog, Meter: rt.Telemetry.Meter("classifier"), MetricPrefix: "classifier", Logger: log},
		api.Deps{Store: ruleRepo, Engine: engine, Pipeline: classifier, RulesVersion: watcher.Version, Logger: log},
		opsapi.Deps{
			DeadLetters: dlq, Sources: repRepo, History: storage.NewHistoryRepository(db), Logger: log,
			PollStatus: poll.IndexStatus, SourceStats: sourceStats,
			Priorities: priorityStore, Reprocess: reprocessor,
		},
		modelapi.Deps{Store: modelRepo, InUse: models.InUse, Base: defaultModel.Model(), Labels: labelStore, Logger: log},
		labels.Deps{Store: labelStore, Finder: labelFinder, Topics: labelTopics(models, engine), Logger: log}); err != nil {
		return err
	}

	// Started in this order and stopped in reverse: the poller and the retry
	// worker stop taking work first, then the workers drain the queue, then
	// the committer commits what they produced, and last the heartbeat
	// releases the claims nobody will commit.
	components := []lifecycle.NamedComponent{
		lifecycle.Named("rules_watcher", watcher),
		lifecycle.Named("reputation_cache", repCache),
		lifecycle.Named("breaker_monitor", monitor),
		lifecycle.Named("claim_heartbeat", heartbeat),
		lifecycle.Named("committer", committer),
		lifecycle.Named("batch_processor", proc),
		lifecycle.Named("urgent_processor", urgentProc),
		lifecycle.Named("source_priorities", priorities),
		lifecycle.Named("reprocess", reprocessor),
		lifecycle.Named("http", srv),
		lifecycle.Named("poller", poll),
		lifecycle.Named("duplicate_cleanup", &lifecycle.Loop{Name: "duplicate_cleanup", Logger: log,
			Step: func(ctx context.Context) time.Duration {
				// Duplicate windows, and the published outcomes they outlive.
				n, err := hygiene.Cleanup(ctx, 10_000)
				if err != nil {
					log.WarnContext(ctx, "duplicate windows not cleaned up; tried again later", "error", err)
					return 10 * time.Minute
				}
				if n > 0 {
					log.InfoContext(ctx, "duplicate windows cleaned up", "rows", n)
					return time.Second // more may be waiting
				}
				return 10 * time.Minute
			}}),
	}
	if !cfg.UrgentEnabled {
		components = slices.DeleteFunc(components, func(c lifecycle.NamedComponent) bool { return c.Name == "urgent_processor" })
	}

	if cfg.DLQEnabled {
		cfg.Retry.Breakers = allBreakers
		cfg.Retry.Leases = leases
		retrier, err := deadletter.NewRetryWorker(cfg.Retry, dlq, raw, sink, log)
		if err != nil {
			return err
		}
		components = append(components, lifecycle.Named("dlq_retry", retrier))
	}
	return lifecycle.Run(ctx, log, cfg.HTTP.ShutdownTimeout, components...)
}

// labelTopics are the topics an operator may label with: the deciding
// model's (the crime family as its subcategories) and the rules'.
func labelTopics(models *modelstore.Models, engine *rules.Engine) func() []string {
	return func() []string {
		var out []string
		if m, _ := models.For("", ""); m != nil {
			for _, t := range m.Topics() {
				if t != topicmodel.CrimeTopic {
					out = append(out, t)
				}
			}
		}
		for _, r := range engine.Rules() {
			out = append(out, r.Topic)
		}
		return out
	}
}
