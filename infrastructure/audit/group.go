package audit

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/infrastructure/auth"
)

// GroupConfig is what Group needs.
type GroupConfig struct {
	// Auth verifies the bearer tokens. Required.
	Auth *auth.Authenticator
	// Policy is the minimum role of every route of the group; its admin
	// and read routes are the service's own.
	Policy auth.Policy
	// Store keeps the audit log. Required.
	Store *Store
	// List adapts GET <path>/audit to the service.
	List ListOptions
	// Meter and MetricPrefix make the audit write failure counter (see
	// Config); MetricPrefix is required.
	Meter        metric.Meter
	MetricPrefix string
	// Logger is required.
	Logger *slog.Logger
}

// Group returns the service's API group at path (/api/v1), the way every
// service mounts it: every route audited when it changes something
// (Middleware), then the bearer token verified and the role checked
// against the policy (auth.Authenticator.Middleware), then extra; and the
// audit log readable at GET <path>/audit.
func Group(router gin.IRouter, path string, cfg GroupConfig, extra ...gin.HandlerFunc) (*gin.RouterGroup, error) {
	if cfg.Auth == nil || cfg.Store == nil {
		return nil, errors.New("api group: Auth and Store are required")
	}
	recorder, err := Middleware(Config{Recorder: cfg.Store, Policy: cfg.Policy, Meter: cfg.Meter, MetricPrefix: cfg.MetricPrefix, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("api group: %w", err)
	}
	g := router.Group(path, append([]gin.HandlerFunc{recorder, cfg.Auth.Middleware(cfg.Policy)}, extra...)...)
	g.GET("/audit", ListHandler(cfg.Store, cfg.List, cfg.Logger))
	return g, nil
}
