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
	"github.com/north-cloud/infrastructure/redisclient"
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
	srv := &http.Server{Addr: cfg.Addr, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	// Live-tail streams never end by themselves: end them (and the Redis
	// subscription) when shutdown starts, so Shutdown's drain is not held
	// up by them.
	srv.RegisterOnShutdown(handler.Close)
	defer handler.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("dashboard listening", "addr", cfg.Addr, "dist", cfg.Dist, "classifier", cfg.ClassifierURL,
		"publisher", cfg.PublisherURL, "index_manager", cfg.IndexManagerURL, "read_only", cfg.ReadOnly,
		"prometheus", cfg.PrometheusURL, "prometheus_max_in_flight", cfg.PrometheusMaxInFlight,
		"prometheus_timeout", cfg.PrometheusTimeout.String(), "auth", cfg.Auth.String(),
		"features", cfg.Features.String(), "redis", redisclient.Redact(cfg.RedisURL), "live_max_streams", cfg.LiveMaxStreams,
		"live_buffer", cfg.LiveBuffer, "live_max_duration", cfg.LiveMaxDuration.String(), "live_min_role", cfg.LiveMinRole)

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
