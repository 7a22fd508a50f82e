package worker_test

import (
	"context"
	"database/sql"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	infratelemetry "github.com/north-cloud/infrastructure/telemetry"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/sink"
	"github.com/north-cloud/publisher/internal/telemetry"
	"github.com/north-cloud/publisher/internal/worker"
)

// bundle is what a test needs beside the worker under test.
type bundle struct {
	db      *sql.DB
	dsn     string
	repo    *outbox.Repository
	metrics *telemetry.Metrics
	tp      *infratelemetry.Provider
}

func setup(t testing.TB) *bundle {
	t.Helper()
	db, dsn := outboxtest.Database(t)
	tp, err := infratelemetry.New(context.Background(), infratelemetry.Config{ServiceName: "publisher-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	repo := outbox.NewRepository(db)
	m, err := telemetry.New(tp.Meter("publisher"), repo.Backlog)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{db: db, dsn: dsn, repo: repo, metrics: m, tp: tp}
}

// newWorker returns a worker over repo publishing to rdb with the Redis
// pub/sub sink.
func (b *bundle) newWorker(t testing.TB, cfg worker.Config, repo *outbox.Repository, rdb *redis.Client) *worker.OutboxWorker {
	t.Helper()
	return b.newWorkerSink(t, cfg, repo, redisSink(t, rdb))
}

// newWorkerSink returns a worker over repo publishing through snk.
func (b *bundle) newWorkerSink(t testing.TB, cfg worker.Config, repo *outbox.Repository, snk sink.Sink) *worker.OutboxWorker {
	t.Helper()
	w, err := worker.New(cfg, repo, snk, b.metrics, b.tp.Tracer("test"), testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func redisSink(t testing.TB, rdb *redis.Client) sink.Sink {
	t.Helper()
	s, err := sink.NewRedis(rdb)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mirrorSink is the Redis pub/sub sink mirrored to streams
// (PUBLISHER_STREAM_MIRROR).
func mirrorSink(t testing.TB, rdb *redis.Client, cfg sink.MirrorConfig) sink.Sink {
	t.Helper()
	m, err := sink.NewMirror(redisSink(t, rdb), rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// startWorker starts a worker that LISTENs on the test database, publishes
// to rdb and is stopped when the test ends.
func (b *bundle) startWorker(t testing.TB, cfg worker.Config, rdb *redis.Client) *worker.OutboxWorker {
	t.Helper()
	return b.startWorkerSink(t, cfg, redisSink(t, rdb))
}

// startWorkerSink is startWorker publishing through snk.
func (b *bundle) startWorkerSink(t testing.TB, cfg worker.Config, snk sink.Sink) *worker.OutboxWorker {
	t.Helper()
	if cfg.ListenURL == "" {
		cfg.ListenURL = b.dsn
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 200 * time.Millisecond
	}
	w := b.newWorkerSink(t, cfg, b.repo, snk)
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	})
	return w
}

func (b *bundle) count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// retried counts the rows that spent a retry.
func (b *bundle) retried(t testing.TB) int {
	t.Helper()
	return b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE retry_count > 0`)
}

func (b *bundle) scrape(t testing.TB) string {
	t.Helper()
	rec := httptest.NewRecorder()
	b.tp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}
