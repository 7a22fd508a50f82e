package redisclient

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/testenv"
)

func TestNewConnectsAndPings(t *testing.T) {
	t.Parallel()
	url := testenv.Env(t, "REDIS_URL", "redis")
	client, err := Open(context.Background(), Config{URL: url, ConnectTimeout: 5 * time.Second}, testenv.Logger(t))
	if err != nil {
		testenv.Unavailable(t, "redis", err)
	}
	defer client.Close()
	if err := Ping(client)(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func TestNewGivesUpAndConfigRejectsBadURL(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Config{URL: "redis://127.0.0.1:1/0", ConnectTimeout: 500 * time.Millisecond}, testenv.Logger(t))
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err = %v, want a connect error naming the address", err)
	}
	l := config.NewFromMap(map[string]string{"REDIS_URL": "http://x"})
	ConfigFromEnv(l)
	if err := l.Err(); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Fatalf("config error = %v, want one naming REDIS_URL", err)
	}
}

// Redis has its own redaction (not postgres.Redact): the password of
// either URL form and of a password parameter is masked.
func TestRedact(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"redis://:s3cr3t@127.0.0.1:6379/0":              "redis://:xxxxx@127.0.0.1:6379/0",
		"rediss://publisher:s3cr3t@redis:6380/1":        "rediss://publisher:xxxxx@redis:6380/1",
		"redis://127.0.0.1:6379/0":                      "redis://127.0.0.1:6379/0",
		"redis://127.0.0.1:6379/0?password=s3cr3t&db=2": "redis://127.0.0.1:6379/0?db=2&password=xxxxx",
	} {
		if got := Redact(raw); got != want || strings.Contains(got, "s3cr3t") {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A redis+cluster:// URL opens a cluster client on its seed nodes; any
// other URL a client of one server.
func TestOpenClusterURL(t *testing.T) {
	t.Parallel()
	opts, err := ParseCluster("redis+cluster://:pw@127.0.0.1:7101?addr=127.0.0.1:7102&addr=127.0.0.1:7103&dial_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Addrs) != 3 || opts.Addrs[0] != "127.0.0.1:7101" || opts.Password != "pw" || opts.DialTimeout != 2*time.Second {
		t.Errorf("cluster options: addrs %v, password %q, dial timeout %s", opts.Addrs, opts.Password, opts.DialTimeout)
	}
	if _, err := ParseCluster("redis://127.0.0.1:6379/0"); err == nil {
		t.Error("ParseCluster accepted a single-server URL")
	}
	l := config.NewFromMap(map[string]string{"REDIS_URL": "rediss+cluster://redis:7000"})
	if cfg := ConfigFromEnv(l); l.Err() != nil || !IsCluster(cfg.URL) {
		t.Errorf("REDIS_URL=rediss+cluster://redis:7000: %v, cluster %t", l.Err(), IsCluster(cfg.URL))
	}
	if got := Redact("redis+cluster://:s3cr3t@127.0.0.1:7101?addr=127.0.0.1:7102"); strings.Contains(got, "s3cr3t") {
		t.Errorf("Redact of a cluster URL leaks the password: %s", got)
	}
	_, err = Open(context.Background(), Config{URL: "redis+cluster://127.0.0.1:1", ConnectTimeout: 500 * time.Millisecond}, testenv.Logger(t))
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Open of an unreachable cluster: %v, want a connect error naming the seed", err)
	}

	url := testenv.Env(t, "REDIS_URL", "redis")
	client, err := Open(context.Background(), Config{URL: url, ConnectTimeout: 5 * time.Second}, testenv.Logger(t))
	if err != nil {
		testenv.Unavailable(t, "redis", err)
	}
	defer client.Close()
	_, isCluster := client.(*redis.ClusterClient)
	if isCluster != IsCluster(url) {
		t.Errorf("Open(%s) gave a cluster client: %t", Redact(url), isCluster)
	}
	if err := Ping(client)(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}
