// Command publisher drains the transactional outbox into Redis pub/sub.
//
//	publisher [serve]              run the service
//	publisher migrate up|down [N]|version
package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/redisclient"
	"github.com/north-cloud/infrastructure/service"
	"github.com/north-cloud/publisher/internal/api"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/sink"
	"github.com/north-cloud/publisher/internal/telemetry"
	"github.com/north-cloud/publisher/internal/worker"
	"github.com/north-cloud/publisher/migrations"
)

// serveCommand is the serve subcommand: serve, with its configuration read.
var serveCommand = service.ServeCommand(loadConfig, serve)

// Same shape as the other services' main: kept apart because each binary
// names its own commands; what they share is in infrastructure/service.
func main() {
	service.Main("serve", map[string]service.Command{
		"serve":   serveCommand,
		"migrate": service.MigrateCommand("publisher", "PUBLISHER_DATABASE_URL", migrations.FS),
	})
}

// Config is the publisher's whole configuration; docs/configuration.md
// lists every variable.
type Config struct {
	service.Common
	DB     postgres.Config
	Redis  redisclient.Config
	Worker worker.Config
	// StreamMirror also appends every published message to a capped
	// stream per channel (PUBLISHER_STREAM_MIRROR).
	StreamMirror bool
	Stream       sink.MirrorConfig
	Rescuer      worker.RescuerConfig
	Cleaner      worker.CleanerConfig
	// WorkerEnabled runs the outbox worker (PUBLISHER_OUTBOX_ENABLED). Off,
	// the publisher serves its API, rescues and cleans, and publishes
	// nothing: rows wait pending until a publisher with the worker on runs.
	WorkerEnabled bool
}

func loadConfig(l *config.Loader) (Config, error) {
	c := Config{
		Common: service.LoadCommon(l, "publisher", "PUBLISHER_HTTP_ADDR", ":8070"),
		DB:     postgres.ConfigFromEnv(l, "PUBLISHER_DATABASE_URL"),
		Redis:  redisclient.ConfigFromEnv(l),
		Worker: worker.Config{
			PollInterval:   l.Duration("PUBLISHER_OUTBOX_POLL_INTERVAL", worker.PollIntervalDefault),
			BatchSize:      l.PositiveInt("PUBLISHER_OUTBOX_BATCH_SIZE", worker.BatchSizeDefault),
			ClaimLoops:     l.PositiveInt("PUBLISHER_OUTBOX_CLAIM_LOOPS", worker.ClaimLoopsDefault),
			PublishTimeout: l.Duration("PUBLISHER_OUTBOX_PUBLISH_TIMEOUT", worker.PublishTimeoutDefault),
			NotifyDebounce: l.NonNegativeDuration("PUBLISHER_OUTBOX_NOTIFY_DEBOUNCE", worker.NotifyDebounceDefault),
			Retry: backoff.Policy{
				Initial:    l.Duration("PUBLISHER_OUTBOX_RETRY_INITIAL", worker.RetryInitialDefault),
				Max:        l.Duration("PUBLISHER_OUTBOX_RETRY_MAX", worker.RetryMaxDefault),
				Multiplier: 2,
				Jitter:     0.2,
			},
			BreakerThreshold:         l.PositiveInt("PUBLISHER_REDIS_BREAKER_THRESHOLD", worker.BreakerThresholdDefault),
			BreakerCooldown:          l.Duration("PUBLISHER_REDIS_BREAKER_COOLDOWN", worker.BreakerCooldownDefault),
			PostgresBreakerThreshold: l.PositiveInt("PUBLISHER_POSTGRES_BREAKER_THRESHOLD", worker.BreakerThresholdDefault),
			PostgresBreakerCooldown:  l.Duration("PUBLISHER_POSTGRES_BREAKER_COOLDOWN", worker.BreakerCooldownDefault),
		},
		StreamMirror: l.Bool("PUBLISHER_STREAM_MIRROR", false),
		Stream:       sink.MirrorConfig{MaxLen: l.PositiveInt64("PUBLISHER_STREAM_MAXLEN", sink.StreamMaxLenDefault)},
		Rescuer: worker.RescuerConfig{
			StaleAfter: l.Duration("PUBLISHER_OUTBOX_STALE_AFTER", worker.StaleAfterDefault),
		},
		Cleaner: worker.CleanerConfig{
			Retention: l.Duration("PUBLISHER_OUTBOX_RETENTION", worker.RetentionDefault),
			Interval:  l.Duration("PUBLISHER_OUTBOX_CLEANUP_INTERVAL", worker.CleanupIntervalDefault),
		},
	}
	l.Check("PUBLISHER_OUTBOX_BATCH_SIZE", c.Worker.BatchSize <= 5000, fmt.Sprintf("must be at most 5000 (got %d)", c.Worker.BatchSize))
	l.Check("PUBLISHER_OUTBOX_CLAIM_LOOPS", c.Worker.ClaimLoops <= 16, fmt.Sprintf("must be at most 16 (got %d)", c.Worker.ClaimLoops))
	l.Check("PUBLISHER_OUTBOX_RETRY_MAX", c.Worker.Retry.Max >= c.Worker.Retry.Initial,
		fmt.Sprintf("must not be below PUBLISHER_OUTBOX_RETRY_INITIAL (got %s < %s)", c.Worker.Retry.Max, c.Worker.Retry.Initial))
	l.Check("PUBLISHER_OUTBOX_STALE_AFTER", c.Rescuer.StaleAfter > c.Worker.PublishTimeout,
		fmt.Sprintf("must be longer than PUBLISHER_OUTBOX_PUBLISH_TIMEOUT (got %s <= %s), or rows still being published would be published twice",
			c.Rescuer.StaleAfter, c.Worker.PublishTimeout))
	c.Worker.ListenURL = c.DB.URL
	c.WorkerEnabled = l.Bool("PUBLISHER_OUTBOX_ENABLED", true)
	return c, l.Err()
}

// serve runs the service (service.ServeCommand has read cfg and built rt).
func serve(ctx context.Context, cfg Config, rt *service.Runtime) error {
	log := rt.Logger
	log.InfoContext(ctx, "starting publisher", "http_addr", cfg.HTTP.Addr, "database", postgres.Redact(cfg.DB.URL),
		"redis", redisclient.Redact(cfg.Redis.URL), "auth", cfg.Auth.String(),
		"batch_size", cfg.Worker.BatchSize, "claim_loops", cfg.Worker.ClaimLoops, "poll_interval", cfg.Worker.PollInterval.String(),
		"publish_timeout", cfg.Worker.PublishTimeout.String(), "notify_debounce", cfg.Worker.NotifyDebounce.String(),
		"retry_initial", cfg.Worker.Retry.Initial.String(), "retry_max", cfg.Worker.Retry.Max.String(),
		"breaker_threshold", cfg.Worker.BreakerThreshold, "breaker_cooldown", cfg.Worker.BreakerCooldown.String(),
		"postgres_breaker_threshold", cfg.Worker.PostgresBreakerThreshold,
		"postgres_breaker_cooldown", cfg.Worker.PostgresBreakerCooldown.String(),
		"stream_mirror", cfg.StreamMirror, "stream_maxlen", cfg.Stream.MaxLen,
		"stale_after", cfg.Rescuer.StaleAfter.String(), "retention", cfg.Cleaner.Retention.String(),
		"cleanup_interval", cfg.Cleaner.Interval.String())

	db, err := postgres.OpenMigrated(ctx, cfg.DB, migrations.FS, log)
	if err != nil {
		return err
	}
	defer db.Close()
	rdb, err := redisclient.Open(ctx, cfg.Redis, log)
	if err != nil {
		return err
	}
	defer rdb.Close()

	repo := outbox.NewRepository(db)
	metrics, err := telemetry.New(rt.Telemetry.Meter("publisher"), repo.Backlog)
	if err != nil {
		return fmt.Errorf("publisher metrics: %w", err)
	}
	snk, err := newSink(rdb, cfg.StreamMirror, cfg.Stream)
	if err != nil {
		return err
	}
	w, err := worker.New(cfg.Worker, repo, snk, metrics, rt.Telemetry.Tracer("publisher"), log)
	if err != nil {
		return err
	}

	// /ready pings both dependencies and also fails, naming it, while a
	// circuit breaker is open or half-open (the worker is not claiming). A
	// worker switched off is reported as degraded, not unready: the API
	// still serves.
	checks := []httpserver.ReadyCheck{
		{Name: "postgres", Check: postgres.Ping(db)},
		{Name: "redis", Check: redisclient.Ping(rdb)},
		{Name: "postgres_breaker", Check: w.PostgresBreaker().Ready},
		{Name: "redis_breaker", Check: w.RedisBreaker().Ready},
	}
	enabled := int64(1)
	if !cfg.WorkerEnabled {
		enabled = 0
		log.WarnContext(ctx, "outbox worker disabled (PUBLISHER_OUTBOX_ENABLED=false): nothing is published; rows wait pending")
		checks = append(checks, httpserver.ReadyCheck{Name: "outbox_worker", Advisory: true, Check: func(context.Context) error {
			return errors.New("outbox worker disabled (PUBLISHER_OUTBOX_ENABLED=false)")
		}})
	}
	metrics.WorkerEnabled.Record(ctx, enabled)
	srv, err := rt.HTTPServer(cfg.HTTP, checks...)
	if err != nil {
		return err
	}
	auditLog, err := audit.NewStore(db)
	if err != nil {
		return err
	}
	if err := mountAPI(srv.Router(), audit.GroupConfig{Auth: rt.Auth, Store: auditLog, Meter: rt.Telemetry.Meter("publisher"),
		MetricPrefix: "publisher", Logger: log}, api.New(repo, log)); err != nil {
		return err
	}

	components := []lifecycle.NamedComponent{
		lifecycle.Named("outbox_rescuer", worker.NewRescuer(cfg.Rescuer, repo, metrics, log)),
		lifecycle.Named("outbox_cleaner", worker.NewCleaner(cfg.Cleaner, repo, metrics, log)),
	}
	if cfg.WorkerEnabled {
		components = append(components, lifecycle.Named("outbox_worker", w))
	}
	return lifecycle.Run(ctx, log, cfg.HTTP.ShutdownTimeout, append(components, lifecycle.Named("http", srv))...)
}

// newSink picks the sink for the Redis that REDIS_URL names: sharded
// pub/sub (SPUBLISH) on a Redis Cluster, PUBLISH on one server; with the
// stream mirror around it, a cluster's streams on their channels' slots.
func newSink(rdb redis.UniversalClient, mirror bool, stream sink.MirrorConfig) (sink.Sink, error) {
	var snk sink.Sink
	var err error
	if cluster, ok := rdb.(*redis.ClusterClient); ok {
		snk, err = sink.NewSharded(cluster)
		stream.HashTag = true
	} else {
		snk, err = sink.NewRedis(rdb)
	}
	if err != nil || !mirror {
		return snk, err
	}
	return sink.NewMirror(snk, rdb, stream)
}
