// Package api serves the classifier's rule API under /api/v1: the rules
// (list, get, create, update, delete, enable, disable), the rule playground
// (POST /rules/test) and a dry-run classification of a posted document
// (POST /classify). The caller mounts it on a group guarded by the JWT
// middleware.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
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

// Classifier is the live classification pipeline; *pipeline.Classifier is
// one. Classify must not write anything.
type Classifier interface {
	Classify(raw *domain.RawContent) (*domain.ClassifiedContent, error)
}

// DBTimeoutDefault bounds the database work of one request, so a database
// that hangs answers 503 instead of holding the request.
const DBTimeoutDefault = 5 * time.Second

// Deps are the API's collaborators.
type Deps struct {
	// Store holds the rules. Required.
	Store RuleStore
	// Engine answers POST /rules/test. Required.
	Engine Matcher
	// Classifier answers POST /classify. Required.
	Classifier Classifier
	// RulesVersion, when set, returns the rule-set version in Engine
	// (rulestore.Watcher.Version); /rules/test and /classify report it.
	RulesVersion func() int64
	// Logger logs unexpected errors. Required.
	Logger *slog.Logger
	// DBTimeout bounds each request's database work. Defaults to
	// DBTimeoutDefault.
	DBTimeout time.Duration
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
	if deps.Classifier == nil {
		errs = append(errs, errors.New("Classifier is required"))
	}
	if deps.Logger == nil {
		errs = append(errs, errors.New("Logger is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register rules api: %w", err)
	}
	if deps.DBTimeout <= 0 {
		deps.DBTimeout = DBTimeoutDefault
	}
	deps.Logger = deps.Logger.With(slog.String("component", "rules_api"))
	h := &handler{Deps: deps}

	router.GET("/rules", h.listRules)
	router.POST("/rules", h.createRule)
	router.POST("/rules/test", h.testRules)
	router.GET("/rules/:id", h.getRule)
	router.PUT("/rules/:id", h.updateRule)
	router.DELETE("/rules/:id", h.deleteRule)
	router.POST("/rules/:id/enable", h.enableRule)
	router.POST("/rules/:id/disable", h.disableRule)
	router.POST("/classify", h.classify)
	return nil
}

func (h *handler) dbContext(c *gin.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request.Context(), h.DBTimeout)
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
		httpserver.WriteError(c, http.StatusNotFound, "not_found", "rule not found")
	case errors.Is(err, rulestore.ErrConflict):
		httpserver.WriteError(c, http.StatusConflict, "conflict", "a rule with this name already exists")
	case errors.Is(err, rulestore.ErrUnavailable) || rulestore.IsUnavailable(err):
		h.Logger.WarnContext(c.Request.Context(), "rule database unavailable",
			slog.String("request_id", httpserver.RequestID(c.Request.Context())), slog.Any("error", err))
		httpserver.WriteError(c, http.StatusServiceUnavailable, "database_unavailable", "the rule database is unavailable; retry later")
	default:
		h.Logger.ErrorContext(c.Request.Context(), "rules api error",
			slog.String("request_id", httpserver.RequestID(c.Request.Context())), slog.Any("error", err))
		httpserver.WriteError(c, http.StatusInternalServerError, "internal_error", "internal error")
	}
}

func badRequest(c *gin.Context, msg string) {
	httpserver.WriteError(c, http.StatusBadRequest, "bad_request", msg)
}

// decodeJSON reads the body into v, refusing unknown fields (a misspelt
// field is a 400, not a silently ignored value) and trailing data. It
// writes the error response and returns false on failure.
func decodeJSON(c *gin.Context, v any) bool {
	dec := json.NewDecoder(c.Request.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("unexpected data after the JSON object")
	}
	if err == nil {
		return true
	}
	var maxErr *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &maxErr):
		httpserver.WriteError(c, http.StatusRequestEntityTooLarge, "body_too_large", "request body is too large")
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		badRequest(c, fmt.Sprintf("%s: must be %s (got %s)", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value))
	case errors.As(err, &syntaxErr):
		badRequest(c, fmt.Sprintf("body: invalid JSON at byte %d: %v", syntaxErr.Offset, err))
	case err.Error() == "EOF":
		badRequest(c, "body: a JSON object is required")
	default:
		badRequest(c, "body: "+err.Error())
	}
	return false
}

func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "float64", "float32":
		return "a number"
	case "int", "int64", "int32":
		return "an integer"
	}
	return kind
}
