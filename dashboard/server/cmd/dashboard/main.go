// Command dashboard serves the built dashboard (dashboard/dist) on
// 127.0.0.1:3000 (DASHBOARD_ADDR) and proxies /api/classifier,
// /api/publisher and /api/index-manager to the services, and
// /api/prometheus to a bounded set of Prometheus queries for holders of a
// token; /api/live tails the publisher's Redis channels and /api/features
// serves DASHBOARD_FEATURES. See package server for the settings.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	server "github.com/north-cloud/dashboard-server"
)

// shutdownTimeout bounds the drain of in-flight requests on SIGTERM.
const shutdownTimeout = 15 * time.Second

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("service", "dashboard")
	cfg, err := server.ConfigFromEnv(os.Getenv)
	if err != nil {
		logger.Error("invalid configuration", "error", err)
		os.Exit(2)
	}
	handler, err := server.New(cfg, logger)
	if err != nil {
		logger.Error("invalid configuration", "error", err)
		os.Exit(2)
	}
	srv := server.NewHTTPServer(cfg.Addr, handler)
	// Live-tail streams never end by themselves: end them (and the Redis
	// subscription) when shutdown starts, so Shutdown's drain is not held
	// up by them.
	srv.RegisterOnShutdown(handler.Close)
	defer handler.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("dashboard listening", cfg.LogAttrs()...)

	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			logger.Error("server failed", "error", err)
			os.Exit(1)
		}
	case <-ctx.Done():
		logger.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			logger.Error("shutdown", "error", err)
			os.Exit(1)
		}
	}
}
