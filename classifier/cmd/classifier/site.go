package main

import (
	"context"
	"log/slog"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/labels"
	"github.com/north-cloud/classifier/internal/modelapi"
	"github.com/north-cloud/classifier/internal/modelstore"
	"github.com/north-cloud/classifier/internal/opsapi"
	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/classifier/internal/reprocess"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/sourcestats"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/service"
)

// site is the HTTP server (/health, /ready, /metrics and the API under
// /api/v1) and the reprocess runner behind its routes. Reprocess requests
// run in the background on the replica that took them; the runner starts
// before the HTTP server takes requests.
type site struct {
	server      *httpserver.Server
	reprocessor *reprocess.Runner
}

// newSite builds the server over every part it reports on or serves.
func newSite(cfg Config, rt *service.Runtime, c *connections, g *guards, dlq *deadletter.Repository, rs *ruleSet,
	cl *classification, p *processing, f *feed, metrics *telemetry.Metrics, log *slog.Logger) (*site, error) {
	srv, err := rt.HTTPServer(cfg.HTTP,
		httpserver.ReadyCheck{Name: "postgres", Check: postgres.Ping(c.db)},
		httpserver.ReadyCheck{Name: "outbox_postgres", Check: postgres.Ping(c.outbox)},
		httpserver.ReadyCheck{Name: "elasticsearch", Check: esclient.Ping(c.es)},
		httpserver.ReadyCheck{Name: "elasticsearch_breaker", Check: g.Elasticsearch.Ready},
		httpserver.ReadyCheck{Name: "postgres_breaker", Check: g.Postgres.Ready},
		httpserver.ReadyCheck{Name: "outbox_postgres_breaker", Check: g.Outbox.Ready},
		// One failing raw index does not make the service unready (the
		// others flow); /ready names it in its details.
		httpserver.ReadyCheck{Name: "raw_indices", Advisory: true, Check: func(context.Context) error { return poller.Failing(f.poller.IndexStatus()) }},
		// A stored rule set over the cost budget is refused (the engine keeps
		// the last good set); /ready names it without making the service unready.
		httpserver.ReadyCheck{Name: "rules_budget", Advisory: true, Check: rs.watcher.BudgetCheck},
	)
	if err != nil {
		return nil, err
	}
	sourceStats, err := sourcestats.New(sourcestats.Config{ES: c.es, DB: c.db, RawPattern: cfg.Poller.IndexPattern})
	if err != nil {
		return nil, err
	}
	reprocessor, err := reprocess.New(reprocess.Config{Raw: p.raw, DB: c.db, ReplicaID: cfg.Poller.ReplicaID, Logger: log, Metrics: metrics,
		PageSize: cfg.ReprocessPageSize})
	if err != nil {
		return nil, err
	}
	auditLog, err := audit.NewStore(c.db)
	if err != nil {
		return nil, err
	}
	labelStore := labels.NewStore(c.db)
	labelFinder, err := labels.NewFinder(labels.FinderConfig{ES: c.es, Pattern: labels.ClassifiedPattern(cfg.Poller.IndexPattern)})
	if err != nil {
		return nil, err
	}
	// The playground runs on the active engine only, so its requests are
	// not counted as shadow-mode comparisons.
	if err := mountAPI(srv.Router(),
		audit.GroupConfig{Auth: rt.Auth, Store: auditLog, Meter: rt.Telemetry.Meter("classifier"), MetricPrefix: "classifier", Logger: log},
		api.Deps{Store: rs.repo, Engine: rs.engine, Pipeline: cl.pipeline, RulesVersion: rs.watcher.Version, Logger: log},
		opsapi.Deps{
			DeadLetters: dlq, Sources: cl.reputation, History: storage.NewHistoryRepository(c.db), Logger: log,
			PollStatus: f.poller.IndexStatus, SourceStats: sourceStats,
			Priorities: f.priorityStore, Reprocess: reprocessor,
		},
		modelapi.Deps{Store: rs.modelRepo, InUse: rs.models.InUse, Base: rs.base.Model(), Labels: labelStore, Logger: log},
		labels.Deps{Store: labelStore, Finder: labelFinder, Topics: labelTopics(rs.models, rs.engine), Logger: log}); err != nil {
		return nil, err
	}
	return &site{server: srv, reprocessor: reprocessor}, nil
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
