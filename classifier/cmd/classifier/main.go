// Command classifier polls raw content, classifies it and hands it to the
// publisher through the outbox.
//
//	classifier [serve]              run the service
//	classifier migrate up|down [N]|version
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/classifier/internal/processor"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/logger"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/service"
)

const defaultSubmitTimeout = 30 * time.Second

func main() {
	service.Main("serve", map[string]service.Command{
		"serve":   serve,
		"migrate": migrate,
	})
}

func migrate(_ context.Context, args []string) error {
	l := config.New()
	dbURL := l.Required("CLASSIFIER_DATABASE_URL")
	logCfg := logger.ConfigFromEnv(l, "classifier")
	if err := l.Err(); err != nil {
		return err
	}
	log, err := logger.New(os.Stderr, logCfg)
	if err != nil {
		return err
	}
	return postgres.RunCommand(dbURL, migrations.FS, ".", args, os.Stdout, log)
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
		"elasticsearch", cfg.ES.URL, "index_pattern", cfg.Poller.IndexPattern, "auth", cfg.Auth.String())

	if err := postgres.MigrateUp(cfg.DB.URL, migrations.FS, ".", log); err != nil {
		return err
	}

	db, err := postgres.Open(ctx, cfg.DB, log)
	if err != nil {
		return err
	}
	defer db.Close()
	outboxDB, err := postgres.Open(ctx, cfg.OutboxDB, log)
	if err != nil {
		return err
	}
	defer outboxDB.Close()
	es, err := esclient.New(ctx, cfg.ES, log)
	if err != nil {
		return err
	}
	if err := contentindex.EnsureTemplates(ctx, es); err != nil {
		return err
	}

	metrics, err := telemetry.New(rt.Telemetry.Meter("classifier"), telemetry.Gauges{})
	if err != nil {
		return fmt.Errorf("classifier metrics: %w", err)
	}
	tracer := rt.Telemetry.Tracer("classifier")
	proc := processor.New(pipeline.New(), processor.Stores{
		Content: storage.NewContentStore(es),
		History: storage.NewHistoryRepository(db),
		Outbox:  storage.NewOutboxWriter(outboxDB),
	}, metrics, tracer, log)
	poll, err := poller.New(cfg.Poller, es, proc.Handle, metrics, tracer, log)
	if err != nil {
		return err
	}

	srv, err := httpserver.New(cfg.HTTP, log, rt.Telemetry.Handler(),
		httpserver.ReadyCheck{Name: "postgres", Check: postgres.Ping(db)},
		httpserver.ReadyCheck{Name: "outbox_postgres", Check: postgres.Ping(outboxDB)},
		httpserver.ReadyCheck{Name: "elasticsearch", Check: esclient.Ping(es)},
	)
	if err != nil {
		return err
	}
	srv.Router().Group("/api/v1", rt.Auth.Middleware())

	return lifecycle.Run(ctx, log, cfg.HTTP.ShutdownTimeout,
		lifecycle.Named("http", srv),
		lifecycle.Named("poller", poll),
	)
}
