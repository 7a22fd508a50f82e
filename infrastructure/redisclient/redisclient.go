// Package redisclient builds the go-redis client and waits, with backoff, for
// Redis to answer before a service starts. A URL with the scheme
// redis+cluster:// (or rediss+cluster://) names a Redis Cluster, for which
// Open returns a cluster client.
package redisclient

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
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

// Cluster URL schemes. redis+cluster://host:port?addr=host2:port2 names a
// Redis Cluster by one or more seed nodes (the first in the authority, more
// as addr parameters; the client discovers the rest of the cluster from
// them); the parameters are go-redis's cluster URL options.
const (
	ClusterScheme    = "redis+cluster"
	ClusterTLSScheme = "rediss+cluster"
)

// Config describes the Redis server.
type Config struct {
	// URL is a redis:// or rediss:// URL of one server, or a
	// redis+cluster:// or rediss+cluster:// URL of a Redis Cluster.
	// Defaults to URLDefault.
	URL string
	// ConnectTimeout bounds start-up retries. Defaults to ConnectTimeoutDefault.
	ConnectTimeout time.Duration
}

// ConfigFromEnv reads REDIS_URL and CONNECT_TIMEOUT.
func ConfigFromEnv(l *config.Loader) Config {
	return Config{
		URL:            l.URL("REDIS_URL", URLDefault, "redis", "rediss", ClusterScheme, ClusterTLSScheme),
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

// IsCluster reports whether a Redis URL names a Redis Cluster.
func IsCluster(raw string) bool {
	return strings.HasPrefix(raw, ClusterScheme+"://") || strings.HasPrefix(raw, ClusterTLSScheme+"://")
}

// ParseCluster turns a redis+cluster:// URL into go-redis cluster options.
func ParseCluster(raw string) (*redis.ClusterOptions, error) {
	if !IsCluster(raw) {
		return nil, fmt.Errorf("parse redis cluster url: scheme is not %s or %s", ClusterScheme, ClusterTLSScheme)
	}
	opts, err := redis.ParseClusterURL(strings.Replace(raw, "+cluster://", "://", 1))
	if err != nil {
		return nil, fmt.Errorf("parse redis cluster url: %w", err)
	}
	return opts, nil
}

// Open returns a client after Redis has answered PING, retrying with
// backoff for up to ConnectTimeout: a *redis.ClusterClient when the URL
// names a cluster (IsCluster), else a *redis.Client (as New).
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (redis.UniversalClient, error) {
	if !IsCluster(cfg.URL) {
		return New(ctx, cfg, logger)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = ConnectTimeoutDefault
	}
	opts, err := ParseCluster(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("new redis cluster client: %w", err)
	}
	client := redis.NewClusterClient(opts)
	if err := waitPing(ctx, client, cfg.ConnectTimeout, strings.Join(opts.Addrs, ","), logger); err != nil {
		_ = client.Close()
		return nil, err
	}
	return client, nil
}

// New returns a client of one Redis server after it has answered PING,
// retrying with backoff for up to ConnectTimeout.
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
	if err := waitPing(ctx, client, cfg.ConnectTimeout, opts.Addr, logger); err != nil {
		_ = client.Close()
		return nil, err
	}
	return client, nil
}

func waitPing(ctx context.Context, client redis.UniversalClient, timeout time.Duration, addr string, logger *slog.Logger) error {
	err := backoff.Retry(ctx, backoff.Policy{Initial: 250 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}, timeout,
		Ping(client),
		func(attempt int, err error, wait time.Duration) {
			logger.WarnContext(ctx, "redis not reachable yet", "addr", addr, "attempt", attempt, "retry_in", wait.String(), "error", err)
		})
	if err != nil {
		return fmt.Errorf("connect redis %s: %w", addr, err)
	}
	return nil
}

// Ping returns a check that succeeds when Redis answers PING (for a
// cluster client, one node of the cluster); it is the /ready check for
// Redis.
func Ping(client redis.UniversalClient) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if err := client.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis ping: %w", err)
		}
		return nil
	}
}
