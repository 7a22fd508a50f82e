package redisclient

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/testenv"
)

func TestNewConnectsAndPings(t *testing.T) {
	t.Parallel()
	url := testenv.Env(t, "REDIS_URL", "redis")
	client, err := New(context.Background(), Config{URL: url, ConnectTimeout: 5 * time.Second}, testenv.Logger(t))
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
