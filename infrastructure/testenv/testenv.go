// Package testenv gives integration tests their own slice of the real
// services started by scripts/services.sh: a fresh Postgres database, a
// unique Elasticsearch index prefix and a Redis client, each removed when the
// test ends. The connection details come from the variables that
// `scripts/services.sh env` prints.
//
// When a service is unreachable the test is skipped, except under CI=true,
// where it fails: CI never passes by skipping.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq" // postgres driver
	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/esclient"
)

// InCI reports whether missing services must fail tests rather than skip them.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable fails the test under CI and skips it otherwise, naming the
// service and how to start it.
func Unavailable(t testing.TB, service string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s unavailable (%v): start it with `scripts/services.sh up` and `eval \"$(scripts/services.sh env)\"`", service, err)
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Env returns a variable the harness exports, or reports the service
// unavailable when it is unset.
func Env(t testing.TB, name, service string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		Unavailable(t, service, fmt.Errorf("%s is not set", name))
	}
	return v
}

// Logger returns a logger that writes to the test log only when -v is given.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// UniqueName returns prefix followed by 10 random hex characters, safe as a
// database name, index prefix or source name.
func UniqueName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Postgres creates an empty database owned by a new login role, and returns
// a connection string for it. Both are dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	adminURL := Env(t, "POSTGRES_ADMIN_URL", "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("postgres", adminURL)
	if err != nil {
		Unavailable(t, "postgres", err)
	}
	defer admin.Close()
	if err := admin.PingContext(ctx); err != nil {
		Unavailable(t, "postgres", err)
	}
	name := UniqueName("test_")
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s`, name)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db, err := sql.Open("postgres", adminURL)
		if err != nil {
			t.Errorf("drop test database: %v", err)
			return
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return WithDatabase(t, adminURL, name)
}

// WithDatabase returns dsn pointing at database name instead.
func WithDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %q: %v", dsn, err)
	}
	u.Path = "/" + name
	return u.String()
}

// WithUser returns dsn with its user and password replaced.
func WithUser(t testing.TB, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %q: %v", dsn, err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// CreateRole creates a LOGIN role with a random name and password for the
// duration of the test and returns its name and password. Roles are cluster
// wide, so each test gets its own.
func CreateRole(t testing.TB, prefix string) (name, password string) {
	t.Helper()
	adminURL := Env(t, "POSTGRES_ADMIN_URL", "postgres")
	admin, err := sql.Open("postgres", adminURL)
	if err != nil {
		Unavailable(t, "postgres", err)
	}
	defer admin.Close()
	name, password = UniqueName(prefix), UniqueName("pw")
	if _, err := admin.Exec(fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, name, password)); err != nil {
		t.Fatalf("create role: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("postgres", adminURL)
		if err != nil {
			return
		}
		defer db.Close()
		// Databases are dropped by their own cleanups first (LIFO); drop
		// what the role still owns elsewhere, then the role.
		_, _ = db.Exec(fmt.Sprintf(`DROP ROLE IF EXISTS %s`, name))
	})
	return name, password
}

// IndexPrefix starts every test index name, so that a classifier running
// beside the tests (scripts/run.sh) can leave test indices alone with the
// pattern "*_raw_content,-nctest*".
const IndexPrefix = "nctest"

// Elasticsearch returns a client and a unique lowercase prefix. Every index
// whose name starts with the prefix is deleted when the test ends.
func Elasticsearch(t testing.TB) (*esclient.Client, string) {
	t.Helper()
	addr := Env(t, "ELASTICSEARCH_URL", "elasticsearch")
	client, err := esclient.NewLazy(esclient.Config{URL: addr})
	if err != nil {
		t.Fatalf("elasticsearch client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := esclient.Ping(client)(ctx); err != nil {
		Unavailable(t, "elasticsearch", err)
	}
	prefix := UniqueName(IndexPrefix)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.Indices.Delete([]string{prefix + "*"},
			client.Indices.Delete.WithContext(ctx),
			client.Indices.Delete.WithAllowNoIndices(true),
			client.Indices.Delete.WithExpandWildcards("all"))
		if err != nil {
			t.Errorf("delete test indices %s*: %v", prefix, err)
			return
		}
		res.Body.Close()
	})
	return client, prefix
}

// Redis returns a client for the harness's Redis, closed when the test ends.
// Pub/sub channels are shared by every Redis database, so tests that
// subscribe must filter messages by the ids they published.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	raw := Env(t, "REDIS_URL", "redis")
	if isRedisCluster(raw) {
		t.Fatalf("REDIS_URL names a Redis Cluster (NC_REDIS_CLUSTER=1); this test needs one Redis server: run it with the single-node environment")
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatalf("parse REDIS_URL: %v", err)
	}
	client := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		Unavailable(t, "redis", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func isRedisCluster(raw string) bool {
	return strings.HasPrefix(raw, "redis+cluster://") || strings.HasPrefix(raw, "rediss+cluster://")
}

// RedisCluster returns a client for the harness's Redis Cluster, closed
// when the test ends: REDIS_URL as `NC_REDIS_CLUSTER=1 scripts/services.sh
// env` prints it (redis+cluster://seed?addr=...; the same form as
// redisclient.ParseCluster reads). Without NC_REDIS_CLUSTER=1 no cluster is
// asked for and the test is skipped; with it, a cluster that does not
// answer, or whose state is not ok, fails the test under CI=true.
func RedisCluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	if os.Getenv("NC_REDIS_CLUSTER") != "1" {
		t.Skip("no Redis Cluster asked for: start one with `sudo NC_REDIS_CLUSTER=1 scripts/services.sh up` and " +
			"`eval \"$(NC_REDIS_CLUSTER=1 scripts/services.sh env)\"`")
	}
	raw := Env(t, "REDIS_URL", "redis cluster")
	if !isRedisCluster(raw) {
		Unavailable(t, "redis cluster", fmt.Errorf("REDIS_URL is not a redis+cluster:// URL"))
	}
	opts, err := redis.ParseClusterURL(strings.Replace(raw, "+cluster://", "://", 1))
	if err != nil {
		t.Fatalf("parse REDIS_URL: %v", err)
	}
	client := redis.NewClusterClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := client.ClusterInfo(ctx).Result()
	if err != nil {
		Unavailable(t, "redis cluster", err)
	}
	if !strings.Contains(info, "cluster_state:ok") {
		Unavailable(t, "redis cluster", fmt.Errorf("cluster state is not ok:\n%s", info))
	}
	return client
}
