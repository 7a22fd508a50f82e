// Package api serves the classifier's rule API under /api/v1: the rules
// (list, get, create, update, delete, enable, disable), the rule playground
// (POST /rules/test) and a dry-run classification of a posted document
// (POST /classify). The caller mounts it on a group guarded by the JWT
// middleware.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/openapi"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
)

// RuleStore is what the API needs from the rule repository;
// *rulestore.Repository is one.
type RuleStore interface {
	List(ctx context.Context, f rulestore.Filter) ([]rulestore.Rule, error)
	Get(ctx context.Context, id int64) (rulestore.Rule, error)
	Create(ctx context.Context, in rulestore.Input) (rulestore.Rule, error)
	Update(ctx context.Context, id int64, in rulestore.Input) (rulestore.Rule, error)
	Delete(ctx context.Context, id int64) error
	SetEnabled(ctx context.Context, id int64, enabled bool) (rulestore.Rule, error)
}

// Matcher is the live rule engine the playground runs on; *rules.Engine and
// *rules.Shadow are Matchers.
type Matcher interface {
	Match(title, body string) []rules.Match
}

// Pipeline is the live classification pipeline that POST /classify runs on
// a posted document; *pipeline.Pipeline is one. Classify must not write
// anything.
type Pipeline interface {
	Classify(raw *domain.RawContent) (*domain.ClassifiedContent, error)
}

// DBTimeoutDefault bounds the database work of one request, so a database
// that hangs answers 503 instead of holding the request.
const DBTimeoutDefault = 5 * time.Second

// Bounds of the costly routes, POST /rules/test and POST /classify, which
// normalize and match posted text in memory: normalization can grow text
// about 11 times (U+FDFA is 3 bytes and 33 normalized), so 128 KiB of input
// costs at most a few MiB, and at most MaxConcurrentTestsDefault of them
// run at once per replica; one more gets 429 with Retry-After.
const (
	MaxTestBytesDefault       int64 = 128 << 10
	MaxConcurrentTestsDefault       = 4
)

// Deps are the API's collaborators.
type Deps struct {
	// Store holds the rules. Required.
	Store RuleStore
	// Engine answers POST /rules/test. Required.
	Engine Matcher
	// Pipeline answers POST /classify. Required.
	Pipeline Pipeline
	// RulesVersion, when set, returns the rule-set version in Engine
	// (rulestore.Watcher.Version); /rules/test and /classify report it.
	RulesVersion func() int64
	// Logger logs unexpected errors. Required.
	Logger *slog.Logger
	// DBTimeout bounds each request's database work. Defaults to
	// DBTimeoutDefault.
	DBTimeout time.Duration
	// MaxTestBytes bounds the body of /rules/test and /classify (413 past
	// it). Defaults to MaxTestBytesDefault.
	MaxTestBytes int64
	// MaxConcurrentTests bounds how many /rules/test and /classify requests
	// run at once (429 past it). Defaults to MaxConcurrentTestsDefault.
	MaxConcurrentTests int
}

type handler struct {
	Deps
}

// Register adds the routes to router, which the caller guards with the JWT
// middleware (the /api/v1 group).
func Register(router gin.IRouter, deps Deps) error {
	var errs []error
	if deps.Store == nil {
		errs = append(errs, errors.New("Store is required"))
	}
	if deps.Engine == nil {
		errs = append(errs, errors.New("Engine is required"))
	}
	if deps.Pipeline == nil {
		errs = append(errs, errors.New("Pipeline is required"))
	}
	if deps.Logger == nil {
		errs = append(errs, errors.New("Logger is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register rules api: %w", err)
	}
	deps.DBTimeout = config.PositiveOr(deps.DBTimeout, DBTimeoutDefault)
	deps.MaxTestBytes = config.PositiveOr(deps.MaxTestBytes, MaxTestBytesDefault)
	deps.MaxConcurrentTests = config.PositiveOr(deps.MaxConcurrentTests, MaxConcurrentTestsDefault)
	doc, err := openapi.Load()
	if err != nil {
		return fmt.Errorf("register rules api: %w", err)
	}
	deps.Logger = deps.Logger.With(slog.String("component", "rules_api"))
	h := &handler{Deps: deps}
	// One budget for both costly routes: they share the memory and CPU.
	costly := []gin.HandlerFunc{httpserver.LimitConcurrency(deps.MaxConcurrentTests, 1), httpserver.LimitBody(deps.MaxTestBytes)}

	router.GET("/openapi.json", gin.WrapH(doc))
	router.GET("/rules", h.listRules)
	router.POST("/rules", h.createRule)
	router.POST("/rules/test", append(costly, h.testRules)...)
	router.GET("/rules/:id", h.getRule)
	router.PUT("/rules/:id", h.updateRule)
	router.DELETE("/rules/:id", h.deleteRule)
	router.POST("/rules/:id/enable", h.enableRule)
	router.POST("/rules/:id/disable", h.disableRule)
	router.POST("/classify", append(costly, h.classify)...)
	return nil
}

func (h *handler) rulesVersion() *int64 {
	if h.RulesVersion == nil {
		return nil
	}
	v := h.RulesVersion()
	return &v
}

// fail maps an error to its status and the JSON error shape, in one place.
func (h *handler) fail(c *gin.Context, err error) {
	switch {
	case errors.Is(err, rulestore.ErrInvalid):
		httpserver.WriteError(c, http.StatusBadRequest, "invalid_rule", err.Error())
	case errors.Is(err, rulestore.ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, "rule not found")
	case errors.Is(err, rulestore.ErrConflict):
		httpserver.WriteError(c, http.StatusConflict, httpserver.CodeConflict, "a rule with this name already exists")
	case errors.Is(err, rulestore.ErrUnavailable) || rulestore.IsUnavailable(err):
		httpserver.WriteUnavailable(c, h.Logger, httpserver.CodeDatabaseUnavailable, "the rule database is unavailable; retry later", err)
	default:
		httpserver.WriteInternal(c, h.Logger, err)
	}
}
