package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

var testMigrations = fstest.MapFS{
	"m/001_widgets.up.sql":   {Data: []byte(`CREATE TABLE widgets (id SERIAL PRIMARY KEY, name TEXT NOT NULL);`)},
	"m/001_widgets.down.sql": {Data: []byte(`DROP TABLE widgets;`)},
	"m/002_gadgets.up.sql":   {Data: []byte(`CREATE TABLE gadgets (id SERIAL PRIMARY KEY);`)},
	"m/002_gadgets.down.sql": {Data: []byte(`DROP TABLE gadgets;`)},
}

func TestOpenAndMigrateCommand(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	logger := testenv.Logger(t)
	ctx := context.Background()

	db, err := postgres.Open(ctx, postgres.Config{URL: dsn, MaxOpenConns: 3}, logger)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	if got := db.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("MaxOpenConnections = %d, want 3", got)
	}

	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := postgres.RunCommand(dsn, testMigrations, "m", args, &out, logger); err != nil {
			t.Fatalf("migrate %v: %v", args, err)
		}
		return strings.TrimSpace(out.String())
	}
	if got := run("version"); got != "version 0 dirty=false" {
		t.Errorf("fresh version = %q", got)
	}
	if got := run("up"); got != "version 2 dirty=false" {
		t.Errorf("after up = %q", got)
	}
	if got := run("up"); got != "version 2 dirty=false" {
		t.Errorf("second up must be a no-op, got %q", got)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO widgets (name) VALUES ('w')`); err != nil {
		t.Fatalf("table from migration 001 missing: %v", err)
	}
	if got := run("down"); got != "version 1 dirty=false" {
		t.Errorf("after down = %q", got)
	}
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('gadgets') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Errorf("gadgets must be gone after down (exists=%t err=%v)", exists, err)
	}

	var out bytes.Buffer
	if err := postgres.RunCommand(dsn, testMigrations, "m", []string{"sideways"}, &out, logger); err == nil || !strings.Contains(err.Error(), "sideways") {
		t.Errorf("unknown command error = %v, want one naming it", err)
	}
}

func TestOpenGivesUpWithClearError(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: Open must retry, then fail naming the target
	// with the password masked.
	_, err := postgres.Open(context.Background(), postgres.Config{URL: "postgres://u:secret@127.0.0.1:1/db?sslmode=disable", ConnectTimeout: 600 * time.Millisecond}, testenv.Logger(t))
	if err == nil {
		t.Fatal("Open succeeded against a closed port")
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q must name the target and hide the password", err)
	}
}

func TestConfigFromEnvNamesBadVariables(t *testing.T) {
	t.Parallel()
	l := config.NewFromMap(map[string]string{"X_DATABASE_URL": "mysql://h/db", "DATABASE_MAX_OPEN_CONNS": "-1"})
	_ = postgres.ConfigFromEnv(l, "X_DATABASE_URL")
	err := l.Err()
	if err == nil {
		t.Fatal("want a configuration error")
	}
	for _, name := range []string{"X_DATABASE_URL", "DATABASE_MAX_OPEN_CONNS"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

// A database password from .env.example (all contain "change-me") is
// refused at start-up, without echoing it.
func TestConfigFromEnvRefusesExamplePassword(t *testing.T) {
	t.Parallel()
	l := config.NewFromMap(map[string]string{"X_DATABASE_URL": "postgres://classifier:change-me-classifier-db@postgres:5432/classifier"})
	_ = postgres.ConfigFromEnv(l, "X_DATABASE_URL")
	err := l.Err()
	if err == nil || !strings.Contains(err.Error(), "X_DATABASE_URL: its password is an example placeholder") || strings.Contains(err.Error(), "change-me-classifier-db") {
		t.Fatalf("err = %v, want X_DATABASE_URL refused as a placeholder without the password", err)
	}
	l = config.NewFromMap(map[string]string{"X_DATABASE_URL": "postgres://classifier:0f3a9c@postgres:5432/classifier"})
	_ = postgres.ConfigFromEnv(l, "X_DATABASE_URL")
	if err := l.Err(); err != nil {
		t.Fatalf("a real password refused: %v", err)
	}
}
