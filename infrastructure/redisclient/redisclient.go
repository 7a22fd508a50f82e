// Package redisclient builds the go-redis client and waits, with backoff, for
// Redis to answer before a service starts.
package redisclient

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/infrastructure/config"
)

const (
	// URLDefault is the local Redis started by scripts/services.sh.
	URLDefault = "redis://127.0.0.1:6379/0"
	// ConnectTimeoutDefault bounds how long New keeps retrying.
	ConnectTimeoutDefault = 60 * time.Second
)

// Config describes the Redis server.
type Config struct {
	// URL is a redis:// URL. Defaults to URLDefault.
	URL string
	// ConnectTimeout bounds start-up retries. Defaults to ConnectTimeoutDefault.
	ConnectTimeout time.Duration
}

// ConfigFromEnv reads REDIS_URL and CONNECT_TIMEOUT.
func ConfigFromEnv(l *config.Loader) Config {
	return Config{
		URL:            l.URL("REDIS_URL", URLDefault, "redis", "rediss"),
		ConnectTimeout: l.Duration("CONNECT_TIMEOUT", ConnectTimeoutDefault),
	}
}

// Redact returns a Redis URL for logs: the password (of redis://user:pw@
// or redis://:pw@, and of a password query parameter) masked, the rest
// kept so the log still says which server and database.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable redis url>"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// New returns a client after Redis has answered PING, retrying with backoff
// for up to ConnectTimeout.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*redis.Client, error) {
	if cfg.URL == "" {
		cfg.URL = URLDefault
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = ConnectTimeoutDefault
	}
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("new redis client: %w", err)
	}
	client := redis.NewClient(opts)
	err = backoff.Retry(ctx, backoff.Policy{Initial: 250 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}, cfg.ConnectTimeout,
		Ping(client),
		func(attempt int, err error, wait time.Duration) {
			logger.WarnContext(ctx, "redis not reachable yet", "addr", opts.Addr, "attempt", attempt, "retry_in", wait.String(), "error", err)
		})
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("connect redis %s: %w", opts.Addr, err)
	}
	return client, nil
}

// Ping returns a check that succeeds when Redis answers PING; it is the
// /ready check for Redis.
func Ping(client *redis.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if err := client.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis ping: %w", err)
		}
		return nil
	}
}
