// Command index-manager serves the REST API over the content indices.
//
//	index-manager [serve]              run the service
//	index-manager migrate up|down [N]|version
package main

import (
	"context"
	"os"

	"github.com/north-cloud/index-manager/migrations"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/logger"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/service"
)

func main() {
	service.Main("serve", map[string]service.Command{
		"serve":   serve,
		"migrate": migrate,
	})
}

// Config is the index-manager's whole configuration; docs/configuration.md
// lists every variable.
type Config struct {
	service.Common
	DB postgres.Config
	ES esclient.Config
}

func loadConfig(l *config.Loader) (Config, error) {
	c := Config{
		Common: service.LoadCommon(l, "index-manager", "INDEX_MANAGER_HTTP_ADDR", ":8090"),
		DB:     postgres.ConfigFromEnv(l, "INDEX_MANAGER_DATABASE_URL"),
		ES:     esclient.ConfigFromEnv(l),
	}
	return c, l.Err()
}

func migrate(_ context.Context, args []string) error {
	l := config.New()
	dbURL := l.Required("INDEX_MANAGER_DATABASE_URL")
	logCfg := logger.ConfigFromEnv(l, "index-manager")
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
	log.InfoContext(ctx, "starting index-manager", "http_addr", cfg.HTTP.Addr, "database", postgres.Redact(cfg.DB.URL),
		"elasticsearch", cfg.ES.URL, "auth", cfg.Auth.String())

	if err := postgres.MigrateUp(cfg.DB.URL, migrations.FS, ".", log); err != nil {
		return err
	}
	db, err := postgres.Open(ctx, cfg.DB, log)
	if err != nil {
		return err
	}
	defer db.Close()
	es, err := esclient.New(ctx, cfg.ES, log)
	if err != nil {
		return err
	}
	if err := contentindex.EnsureTemplates(ctx, es); err != nil {
		return err
	}

	srv, err := httpserver.New(cfg.HTTP, log, rt.Telemetry.Handler(),
		httpserver.ReadyCheck{Name: "postgres", Check: postgres.Ping(db)},
		httpserver.ReadyCheck{Name: "elasticsearch", Check: esclient.Ping(es)},
	)
	if err != nil {
		return err
	}
	srv.Router().Group("/api/v1", rt.Auth.Middleware())

	return lifecycle.Run(ctx, log, cfg.HTTP.ShutdownTimeout, lifecycle.Named("http", srv))
}
