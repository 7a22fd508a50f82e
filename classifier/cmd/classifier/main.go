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
	"log/slog"
	"os"
	"slices"

	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/esclient"
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

// serve runs the service: it builds the classifier's parts in order, each
// from the parts before it (parts.go, site.go), and runs them until the
// signal to stop.
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
	logStart(ctx, log, cfg)

	conns, err := connect(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer conns.close()
	metrics, err := telemetry.New(rt.Telemetry.Meter("classifier"), telemetry.Gauges{})
	if err != nil {
		return fmt.Errorf("classifier metrics: %w", err)
	}
	tracer := rt.Telemetry.Tracer("classifier")
	guards, err := guard(conns, metrics, log)
	if err != nil {
		return err
	}
	dlq, err := openDeadLetters(conns.db, cfg.DeadLetters, metrics, log)
	if err != nil {
		return err
	}
	rs, err := loadRules(ctx, cfg, conns.db, rt, metrics, log)
	if err != nil {
		return err
	}
	classify, err := newClassification(ctx, cfg, conns.db, rs, metrics, log)
	if err != nil {
		return err
	}
	proc, err := newProcessing(cfg, conns, guards, dlq, classify, metrics, tracer, log)
	if err != nil {
		return err
	}
	feed, err := newFeed(cfg, conns, guards, dlq, proc, metrics, tracer, log)
	if err != nil {
		return err
	}
	web, err := newSite(cfg, rt, conns, guards, dlq, rs, classify, proc, feed, metrics, log)
	if err != nil {
		return err
	}
	return lifecycle.Run(ctx, log, cfg.HTTP.ShutdownTimeout, components(rs, classify, guards, proc, feed, web, log)...)
}

// logStart logs the effective configuration, secrets masked, and what of
// it deserves a warning.
func logStart(ctx context.Context, log *slog.Logger, cfg Config) {
	log.InfoContext(ctx, "starting classifier", "http_addr", cfg.HTTP.Addr, "replica", cfg.Poller.ReplicaID,
		"database", postgres.Redact(cfg.DB.URL), "outbox_database", postgres.Redact(cfg.OutboxDB.URL),
		"elasticsearch", esclient.Redact(cfg.ES.URL), "index_pattern", cfg.Poller.IndexPattern, "matcher", cfg.Matcher,
		"shadow_matcher", cfg.ShadowMatcher, "matcher_rollout_percent", cfg.MatcherRolloutPercent, "dlq_enabled", cfg.DLQEnabled, "workers", cfg.Processor.Concurrency,
		"max_queue_depth", cfg.Processor.MaxQueueDepth, "auth", cfg.Auth.String())
	for _, w := range cfg.Warnings {
		log.WarnContext(ctx, w.msg, w.attrs...)
	}
}

// components are the parts that run, started in this order and stopped in
// reverse: the poller and the retry worker stop taking work first, then the
// workers drain the queue, then the committer commits what they produced,
// and last the heartbeat releases the claims nobody will commit.
func components(rs *ruleSet, cl *classification, g *guards, p *processing, f *feed, web *site, log *slog.Logger) []lifecycle.NamedComponent {
	out := []lifecycle.NamedComponent{
		lifecycle.Named("rules_watcher", rs.watcher),
		lifecycle.Named("reputation_cache", cl.reputationCache),
		lifecycle.Named("breaker_monitor", g.monitor),
		lifecycle.Named("claim_heartbeat", f.heartbeat),
		lifecycle.Named("committer", p.committer),
		lifecycle.Named("batch_processor", p.main),
		lifecycle.Named("urgent_processor", p.urgent),
		lifecycle.Named("source_priorities", f.priorities),
		lifecycle.Named("reprocess", web.reprocessor),
		lifecycle.Named("http", web.server),
		lifecycle.Named("poller", f.poller),
		lifecycle.Named("duplicate_cleanup", p.duplicateCleanup(log)),
		lifecycle.Named("dlq_retry", f.retrier),
	}
	// The urgent queue and the retries run only when turned on.
	return slices.DeleteFunc(out, func(c lifecycle.NamedComponent) bool {
		return (c.Name == "urgent_processor" && p.urgent == nil) || (c.Name == "dlq_retry" && f.retrier == nil)
	})
}
