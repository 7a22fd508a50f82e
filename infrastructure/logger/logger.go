// Package logger builds the structured slog.Logger every service passes down
// to its components, so all services log the same fields in the same format.
package logger

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/north-cloud/infrastructure/config"
)

// Accepted values of Config.Level and Config.Format, and their defaults.
const (
	LevelDefault  = "info"
	FormatDefault = "json"
)

// Config selects the level and encoding of a service's logs.
type Config struct {
	// Level is debug, info, warn or error. Defaults to info (LOG_LEVEL).
	Level string
	// Format is json, for log collectors, or text, for people. Defaults to
	// json (LOG_FORMAT).
	Format string
	// Service is added to every record as the "service" attribute so logs
	// from several services can share one stream. Required.
	Service string
}

// ConfigFromEnv reads LOG_LEVEL and LOG_FORMAT, recording invalid values on l.
func ConfigFromEnv(l *config.Loader, service string) Config {
	return Config{
		Level:   l.OneOf("LOG_LEVEL", LevelDefault, "debug", "info", "warn", "error"),
		Format:  l.OneOf("LOG_FORMAT", FormatDefault, "json", "text"),
		Service: service,
	}
}

func (c *Config) setDefaults() {
	if c.Level == "" {
		c.Level = LevelDefault
	}
	if c.Format == "" {
		c.Format = FormatDefault
	}
}

func (c *Config) level() (slog.Level, error) {
	switch c.Level {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("Level must be debug, info, warn or error (got %q)", c.Level)
}

// New returns a logger writing to w. It fails on an unknown level or format
// rather than guessing, since a wrong guess hides logs when they are needed.
func New(w io.Writer, cfg Config) (*slog.Logger, error) {
	cfg.setDefaults()
	if w == nil {
		return nil, errors.New("new logger: writer is nil")
	}
	if cfg.Service == "" {
		return nil, errors.New("new logger: Service is required")
	}
	level, err := cfg.level()
	if err != nil {
		return nil, fmt.Errorf("new logger: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch cfg.Format {
	case "json":
		h = slog.NewJSONHandler(w, opts)
	case "text":
		h = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("new logger: Format must be json or text (got %q)", cfg.Format)
	}
	return slog.New(h).With(slog.String("service", cfg.Service)), nil
}
