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
