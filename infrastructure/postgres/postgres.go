// Package postgres opens a service's PostgreSQL pool (lib/pq) with connection
// limits and a retried first connection, and runs the service's embedded
// golang-migrate migrations.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/lib/pq" // also registers the "postgres" driver

	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/infrastructure/config"
)

const (
	// MaxOpenConnsDefault is the pool size when Config.MaxOpenConns is zero.
	MaxOpenConnsDefault = 20
	// MaxIdleConnsDefault is the idle pool size when Config.MaxIdleConns is zero.
	MaxIdleConnsDefault = 10
	// ConnMaxLifetimeDefault recycles connections after this long.
	ConnMaxLifetimeDefault = 30 * time.Minute
	// ConnectTimeoutDefault bounds how long Open keeps retrying.
	ConnectTimeoutDefault = 60 * time.Second
)

// Config describes one database pool.
type Config struct {
	// URL is a postgres:// connection string. Required.
	URL string
	// MaxOpenConns limits open connections. Defaults to MaxOpenConnsDefault.
	MaxOpenConns int
	// MaxIdleConns limits idle connections. Defaults to MaxIdleConnsDefault.
	MaxIdleConns int
	// ConnMaxLifetime recycles connections. Defaults to ConnMaxLifetimeDefault.
	ConnMaxLifetime time.Duration
	// ConnectTimeout bounds the retries of the first connection.
	// Defaults to ConnectTimeoutDefault.
	ConnectTimeout time.Duration
}

// ConfigFromEnv reads the pool settings shared by every service and the
// connection string from urlVar (for example CLASSIFIER_DATABASE_URL).
func ConfigFromEnv(l *config.Loader, urlVar string) Config {
	dbURL := l.Required(urlVar)
	if dbURL != "" {
		dbURL = l.URL(urlVar, "", "postgres", "postgresql")
		if u, err := url.Parse(dbURL); err == nil {
			pw, _ := u.User.Password()
			l.Check(urlVar, !strings.Contains(strings.ToLower(pw), "change-me"),
				"its password is an example placeholder of .env.example; set a real one")
		}
	}
	return Config{
		URL:             dbURL,
		MaxOpenConns:    l.PositiveInt("DATABASE_MAX_OPEN_CONNS", MaxOpenConnsDefault),
		MaxIdleConns:    l.PositiveInt("DATABASE_MAX_IDLE_CONNS", MaxIdleConnsDefault),
		ConnMaxLifetime: l.Duration("DATABASE_CONN_MAX_LIFETIME", ConnMaxLifetimeDefault),
		ConnectTimeout:  l.Duration("CONNECT_TIMEOUT", ConnectTimeoutDefault),
	}
}

func (c *Config) setDefaults() {
	c.MaxOpenConns = config.PositiveOr(c.MaxOpenConns, MaxOpenConnsDefault)
	c.MaxIdleConns = config.PositiveOr(c.MaxIdleConns, MaxIdleConnsDefault)
	if c.MaxIdleConns > c.MaxOpenConns {
		c.MaxIdleConns = c.MaxOpenConns
	}
	c.ConnMaxLifetime = config.PositiveOr(c.ConnMaxLifetime, ConnMaxLifetimeDefault)
	c.ConnectTimeout = config.PositiveOr(c.ConnectTimeout, ConnectTimeoutDefault)
}

// Open returns a pool whose first connection has been proven with a ping,
// retried with backoff for up to ConnectTimeout so that a service started
// alongside its database waits for it instead of crashing.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*sql.DB, error) {
	cfg.setDefaults()
	if cfg.URL == "" {
		return nil, errors.New("open postgres: URL is required")
	}
	connector, err := pq.NewConnector(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	connector.Dialer(newDeadPeerDialer())
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(cfg.MaxIdleConns)
	db.SetConnMaxLifetime(cfg.ConnMaxLifetime)

	target := Redact(cfg.URL)
	err = backoff.Retry(ctx, backoff.Policy{Initial: 250 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}, cfg.ConnectTimeout,
		func(ctx context.Context) error {
			pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return db.PingContext(pingCtx)
		},
		func(attempt int, err error, wait time.Duration) {
			logger.WarnContext(ctx, "postgres not reachable yet", "target", target, "attempt", attempt, "retry_in", wait.String(), "error", err)
		})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect postgres %s: %w", target, err)
	}
	return db, nil
}

// Ping checks the pool answers; it is the /ready check of every service.
func Ping(db *sql.DB) func(ctx context.Context) error {
	return func(ctx context.Context) error { return db.PingContext(ctx) }
}

// Redact returns the connection string with its password masked, for logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable postgres url>"
	}
	return u.Redacted()
}
