package worker

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	_ "github.com/lib/pq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/sink"
	"github.com/north-cloud/publisher/internal/telemetry"
)

func proofWorker(t *testing.T, db *sql.DB) *OutboxWorker {
	t.Helper()
	repo := outbox.NewRepository(db)
	metrics, err := telemetry.New(noop.NewMeterProvider().Meter("t"), repo.Backlog)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never used
	t.Cleanup(func() { _ = rdb.Close() })
	snk, err := sink.NewRedis(rdb)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{PostgresBreakerThreshold: 1}, repo, snk, metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A statement that ran out of its own deadline does not tell whether the
// database is out (it may only have waited on a lock): the shared fault
// policy probes the database, and only a failed probe charges the Postgres
// breaker. A statement's own refusal never does.
func TestPostgresOutageIsProvedByAProbe(t *testing.T) {
	t.Parallel()
	db, _ := outboxtest.Database(t)
	slow := fmt.Errorf("claim outbox rows: %w", context.DeadlineExceeded)
	refused := errors.New(`pq: duplicate key value violates unique constraint "classified_outbox_pkey"`)

	alive := proofWorker(t, db)
	alive.postgresFailed(context.Background(), slow)
	alive.postgresFailed(context.Background(), refused)
	if s := alive.postgresBreaker.State(); s != breaker.Closed {
		t.Errorf("a slow statement on a database that answers its probe opened the breaker (%s)", s)
	}

	gone, err := sql.Open("postgres", "postgres://nobody:x@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gone.Close() })
	down := proofWorker(t, gone)
	down.postgresFailed(context.Background(), slow)
	if s := down.postgresBreaker.State(); s != breaker.Open {
		t.Errorf("a slow statement on a database that fails its probe left the breaker %s, want open", s)
	}
}
