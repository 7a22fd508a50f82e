// Package service holds the start-up sequence every binary shares: read the
// common configuration, report every configuration problem at once and exit,
// build the logger, telemetry and authenticator, and run the service's
// components until SIGINT or SIGTERM.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/logger"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/telemetry"
)

// ExitConfig is the exit code of a start-up refused for bad configuration.
const ExitConfig = 2

// Common is the configuration shared by every service.
type Common struct {
	Name      string
	Log       logger.Config
	Telemetry telemetry.Config
	HTTP      httpserver.Config
	Auth      auth.Config
}

// LoadCommon reads the shared settings; addrVar and defaultAddr name the
// service's listen address variable and its default.
func LoadCommon(l *config.Loader, name, addrVar, defaultAddr string) Common {
	return Common{
		Name:      name,
		Log:       logger.ConfigFromEnv(l, name),
		Telemetry: telemetry.ConfigFromEnv(l, name),
		HTTP:      httpserver.ConfigFromEnv(l, name, addrVar, defaultAddr),
		Auth:      auth.ConfigFromEnv(l),
	}
}

// Runtime is what the shared configuration builds.
type Runtime struct {
	Logger    *slog.Logger
	Telemetry *telemetry.Provider
	Auth      *auth.Authenticator
}

// NewRuntime builds the logger, the telemetry provider and the
// authenticator. The caller shuts telemetry down.
func NewRuntime(ctx context.Context, c Common, logOut io.Writer) (*Runtime, error) {
	log, err := logger.New(logOut, c.Log)
	if err != nil {
		return nil, fmt.Errorf("logger: %w", err)
	}
	authn, err := auth.New(c.Auth)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	tp, err := telemetry.New(ctx, c.Telemetry)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return &Runtime{Logger: log, Telemetry: tp, Auth: authn}, nil
}

// HTTPServer builds the service's HTTP server with the runtime's logger, its
// /metrics handler, per-route request metrics and a server span per
// request. /ready shows the error
// text of failing checks only to callers with a valid bearer token.
func (rt *Runtime) HTTPServer(cfg httpserver.Config, checks ...httpserver.ReadyCheck) (*httpserver.Server, error) {
	cfg.Meter = rt.Telemetry.Meter("http")
	cfg.TracerProvider = rt.Telemetry.TracerProvider()
	cfg.ReadyDetails = rt.Auth.Authenticated
	return httpserver.New(cfg, rt.Logger, rt.Telemetry.Handler(), checks...)
}

// Command is one subcommand of a service binary.
type Command func(ctx context.Context, args []string) error

// Main runs the subcommand named by os.Args[1] (def when absent) with a
// context cancelled on SIGINT or SIGTERM, and exits: 0 on success, 2 on a
// configuration error (printed to stderr, naming every variable), 1 on any
// other error.
func Main(def string, commands map[string]Command) {
	args := os.Args[1:]
	name := def
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown command %q; commands:", name)
		for n := range commands {
			fmt.Fprintf(os.Stderr, " %s", n)
		}
		fmt.Fprintln(os.Stderr)
		os.Exit(ExitConfig)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cmd(ctx, args)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, err)
	var cfgErr *config.Error
	if errors.As(err, &cfgErr) {
		os.Exit(ExitConfig)
	}
	os.Exit(1)
}

// Configured is a service's whole configuration: the shared settings and
// its own. A configuration struct that embeds Common is one.
type Configured interface {
	Shared() Common
}

// Shared returns c: what a configuration that embeds Common provides to
// ServeCommand.
func (c Common) Shared() Common { return c }

// ServeCommand returns the serve subcommand of a service: it reads the
// service's configuration with load (a configuration error names every
// variable at once), builds the Runtime of its shared settings, logging to
// stderr, runs run with both until it returns, and then shuts telemetry
// down.
func ServeCommand[C Configured](load func(*config.Loader) (C, error), run func(context.Context, C, *Runtime) error) Command {
	return func(ctx context.Context, _ []string) error {
		cfg, err := load(config.New())
		if err != nil {
			return err
		}
		rt, err := NewRuntime(ctx, cfg.Shared(), os.Stderr)
		if err != nil {
			return err
		}
		defer func() { _ = rt.Telemetry.Shutdown(context.Background()) }()
		return run(ctx, cfg, rt)
	}
}

// MigrateCommand returns the `migrate up|down [N]|version` subcommand of a
// service whose database URL is in urlVar and whose migrations are the
// *.sql files at the root of fsys.
func MigrateCommand(name, urlVar string, fsys fs.FS) Command {
	return func(_ context.Context, args []string) error {
		l := config.New()
		dbURL := l.Required(urlVar)
		logCfg := logger.ConfigFromEnv(l, name)
		if err := l.Err(); err != nil {
			return err
		}
		log, err := logger.New(os.Stderr, logCfg)
		if err != nil {
			return err
		}
		return postgres.RunCommand(dbURL, fsys, ".", args, os.Stdout, log)
	}
}
