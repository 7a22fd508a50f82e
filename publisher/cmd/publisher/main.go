// Command publisher drains the transactional outbox into Redis pub/sub.
//
//	publisher [serve]              run the service
//	publisher migrate up|down [N]|version
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/logger"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/redisclient"
	"github.com/north-cloud/infrastructure/service"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/telemetry"
	"github.com/north-cloud/publisher/internal/worker"
	"github.com/north-cloud/publisher/migrations"
)

func main() {
	service.Main("serve", map[string]service.Command{
		"serve":   serve,
		"migrate": migrate,
	})
}

// Config is the publisher's whole configuration; docs/configuration.md
// lists every variable.
type Config struct {
	service.Common
	DB     postgres.Config
	Redis  redisclient.Config
	Worker worker.Config
}

func loadConfig(l *config.Loader) (Config, error) {
	c := Config{
		Common: service.LoadCommon(l, "publisher", "PUBLISHER_HTTP_ADDR", ":8070"),
		DB:     postgres.ConfigFromEnv(l, "PUBLISHER_DATABASE_URL"),
		Redis:  redisclient.ConfigFromEnv(l),
		Worker: worker.Config{
			PollInterval:   l.Duration("PUBLISHER_OUTBOX_POLL_INTERVAL", worker.PollIntervalDefault),
			BatchSize:      l.PositiveInt("PUBLISHER_OUTBOX_BATCH_SIZE", worker.BatchSizeDefault),
			PublishTimeout: l.Duration("PUBLISHER_OUTBOX_PUBLISH_TIMEOUT", worker.PublishTimeoutDefault),
		},
	}
	l.Check("PUBLISHER_OUTBOX_BATCH_SIZE", c.Worker.BatchSize <= 5000, fmt.Sprintf("must be at most 5000 (got %d)", c.Worker.BatchSize))
	return c, l.Err()
}

func migrate(_ context.Context, args []string) error {
	l := config.New()
	dbURL := l.Required("PUBLISHER_DATABASE_URL")
	logCfg := logger.ConfigFromEnv(l, "publisher")
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
	log.InfoContext(ctx, "starting publisher", "http_addr", cfg.HTTP.Addr, "database", postgres.Redact(cfg.DB.URL),
		"redis", postgres.Redact(cfg.Redis.URL), "auth", cfg.Auth.String())

	if err := postgres.MigrateUp(cfg.DB.URL, migrations.FS, ".", log); err != nil {
		return err
	}
	db, err := postgres.Open(ctx, cfg.DB, log)
	if err != nil {
		return err
	}
	defer db.Close()
	rdb, err := redisclient.New(ctx, cfg.Redis, log)
	if err != nil {
		return err
	}
	defer rdb.Close()

	repo := outbox.NewRepository(db)
	metrics, err := telemetry.New(rt.Telemetry.Meter("publisher"), repo.CountByStatus)
	if err != nil {
		return fmt.Errorf("publisher metrics: %w", err)
	}
	w := worker.New(cfg.Worker, repo, rdb, metrics, rt.Telemetry.Tracer("publisher"), log)

	srv, err := httpserver.New(cfg.HTTP, log, rt.Telemetry.Handler(),
		httpserver.ReadyCheck{Name: "postgres", Check: postgres.Ping(db)},
		httpserver.ReadyCheck{Name: "redis", Check: redisclient.Ping(rdb)},
	)
	if err != nil {
		return err
	}
	srv.Router().Group("/api/v1", rt.Auth.Middleware())

	return lifecycle.Run(ctx, log, cfg.HTTP.ShutdownTimeout,
		lifecycle.Named("http", srv),
		lifecycle.Named("outbox_worker", w),
	)
}
