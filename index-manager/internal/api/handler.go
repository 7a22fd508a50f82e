// Package api is the index-manager's REST API (spec 5.1): index listing,
// inspection, documents, ad-hoc queries, create, delete and refresh behind
// the safety rules of safety.go, the audit log, and operator login.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/audit"
	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/index-manager/internal/openapi"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// QueryTimeoutDefault bounds one search through the API.
const QueryTimeoutDefault = 10 * time.Second

// AuditLog records index-changing operations (audit.Repository).
type AuditLog interface {
	Begin(ctx context.Context, actor, action, index string, params map[string]any, requestID string) (int64, error)
	Finish(ctx context.Context, id int64, outcome string, status int, errMsg string) error
	List(ctx context.Context, f audit.Filter) ([]audit.Entry, error)
}

// RateSource computes an index's rates from stored samples
// (rates.Repository).
type RateSource interface {
	Rates(ctx context.Context, current indices.Counters, now time.Time) (indexing, search float64, err error)
}

// Config holds what the API needs.
type Config struct {
	// Indices is the Elasticsearch access. Required.
	Indices *indices.Store
	// Audit is the audit log. Required.
	Audit AuditLog
	// Rates computes indexing and search rates. Required.
	Rates RateSource
	// Auth verifies bearer tokens and issues them at login. Required.
	Auth *auth.Authenticator
	// Account is the operator login; empty disables login.
	Account Account
	// LoginLimits bound failed logins per user name and client address.
	LoginLimits LoginLimits
	// TokenTTL is the lifetime of login tokens. Defaults to TokenTTLDefault.
	TokenTTL time.Duration
	// CursorKey signs documents cursors. Required, at least 32 bytes.
	CursorKey []byte
	// QueryTimeout bounds each search. Defaults to QueryTimeoutDefault.
	QueryTimeout time.Duration
	// ProtectedIndices cannot be created, deleted or refreshed, in addition
	// to DefaultProtectedIndices.
	ProtectedIndices []string
	// Logger is required.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.TokenTTL == 0 {
		c.TokenTTL = TokenTTLDefault
	}
	if c.QueryTimeout == 0 {
		c.QueryTimeout = QueryTimeoutDefault
	}
	c.LoginLimits.setDefaults()
}

func (c *Config) validate() error {
	var errs []error
	if c.Indices == nil || c.Audit == nil || c.Rates == nil || c.Auth == nil || c.Logger == nil {
		errs = append(errs, errors.New("Indices, Audit, Rates, Auth and Logger are required"))
	}
	if len(c.CursorKey) < 32 {
		errs = append(errs, errors.New("CursorKey must be at least 32 bytes"))
	}
	if c.TokenTTL < 0 || c.QueryTimeout < 0 {
		errs = append(errs, errors.New("TokenTTL and QueryTimeout must be positive"))
	}
	if err := c.Account.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Account: %w", err))
	}
	if err := c.LoginLimits.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("LoginLimits: %w", err))
	}
	return errors.Join(errs...)
}

// Handler serves the API.
type Handler struct {
	store        *indices.Store
	audit        AuditLog
	rates        RateSource
	auth         *auth.Authenticator
	account      Account
	dummyHash    []byte
	userFailures *failureLimiter
	addrFailures *failureLimiter
	tokenTTL     time.Duration
	cursors      cursorCodec
	queryTimeout time.Duration
	protected    map[string]bool
	logger       *slog.Logger
	openapiJSON  []byte
}

// Mount adds the API routes to engine (the engine of httpserver.Server, so
// its body limit, request id, access log and recovery apply): login without
// a token, everything else under /api/v1 behind the bearer token
// middleware. Tests call it with a real Elasticsearch and Postgres behind.
func Mount(engine *gin.Engine, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	doc, err := openapi.JSON()
	if err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	dummy, err := dummyHashFor(cfg.Account)
	if err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	h := &Handler{
		store: cfg.Indices, audit: cfg.Audit, rates: cfg.Rates, auth: cfg.Auth, account: cfg.Account, dummyHash: dummy,
		userFailures: newFailureLimiter(cfg.LoginLimits.PerUser, cfg.LoginLimits.Window),
		addrFailures: newFailureLimiter(cfg.LoginLimits.PerAddress, cfg.LoginLimits.Window),
		tokenTTL:     cfg.TokenTTL, cursors: cursorCodec{key: cfg.CursorKey}, queryTimeout: cfg.QueryTimeout,
		protected: map[string]bool{}, logger: cfg.Logger.With(slog.String("component", "api")), openapiJSON: doc,
	}
	for _, n := range append(append([]string{}, DefaultProtectedIndices...), cfg.ProtectedIndices...) {
		h.protected[n] = true
	}
	// Match routes on the escaped path, so "..%2Fx" or "a%2Fb" reach the
	// handler as one :name and fail validation (400) instead of turning
	// into another route.
	engine.UseRawPath = true
	engine.UnescapePathValues = true

	engine.POST("/api/v1/auth/login", checkText, h.login)
	v1 := engine.Group("/api/v1", cfg.Auth.Middleware(), checkText)
	v1.GET("/openapi.json", h.openapi)
	v1.GET("/indices", h.listIndices)
	v1.POST("/indices", h.createIndex)
	v1.GET("/indices/:name", h.getIndex)
	v1.DELETE("/indices/:name", h.deleteIndex)
	v1.GET("/indices/:name/mappings", h.getMappings)
	v1.GET("/indices/:name/stats", h.getStats)
	v1.GET("/indices/:name/documents", h.listDocuments)
	v1.GET("/indices/:name/documents/:id", h.getDocument)
	v1.POST("/indices/:name/_refresh", h.refreshIndex)
	v1.POST("/indices/:name/_query", h.query)
	v1.GET("/audit", h.listAudit)
	return nil
}

func (h *Handler) openapi(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", h.openapiJSON)
}

// bindJSON decodes exactly one JSON object with no unknown fields, and
// answers 400 (malformed) or 413 (too large) itself when it cannot. The
// body must be valid UTF-8 without NUL characters, must not be null, and
// must hold nothing but white space after the object.
func (h *Handler) bindJSON(c *gin.Context, v any) bool {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpserver.WriteError(c, http.StatusRequestEntityTooLarge, codeTooLarge, "request body is too large")
			return false
		}
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalidJSON, "could not read the request body")
		return false
	}
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalidJSON, "request body must be a JSON object")
		return false
	case bytes.Equal(trimmed, []byte("null")):
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalidJSON, "request body must be a JSON object, not null")
		return false
	case !utf8.Valid(body):
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalidText, "request body is not valid UTF-8")
		return false
	case hasJSONNul(body):
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalidText, `request body contains a NUL character (\u0000), which no text may hold`)
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalidJSON, "malformed JSON: "+jsonProblem(err))
		return false
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalidJSON, "malformed JSON: trailing data after the object")
		return false
	}
	return true
}

// hasJSONNul reports whether a JSON text holds a string (key or value)
// with a NUL character. A raw NUL byte is a JSON syntax error already; only
// the escape \u0000 can carry one, so texts without it are not scanned.
func hasJSONNul(body []byte) bool {
	if !bytes.Contains(body, []byte(`\u0000`)) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			// End of input or a syntax error, which Decode reports.
			return false
		}
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
}

// checkText refuses a request whose path or query string holds a NUL
// character or invalid UTF-8, or whose query string is malformed, with 400
// invalid_text: such text would otherwise reach Postgres (which refuses it
// with an error) or Elasticsearch.
func checkText(c *gin.Context) {
	if msg := textProblem(c.Request.URL); msg != "" {
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalidText, msg)
		c.Abort()
		return
	}
	c.Next()
}

func textProblem(u *url.URL) string {
	if !utf8.ValidString(u.Path) || strings.IndexByte(u.Path, 0) >= 0 {
		return "the path must be valid UTF-8 without NUL characters"
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "the query string is malformed"
	}
	for k, vs := range q {
		for _, s := range append([]string{k}, vs...) {
			if !utf8.ValidString(s) {
				return fmt.Sprintf("query parameter %s is not valid UTF-8", strconv.QuoteToASCII(truncate(k)))
			}
			if strings.IndexByte(s, 0) >= 0 {
				return fmt.Sprintf("query parameter %s contains a NUL character, which no text may hold", strconv.QuoteToASCII(truncate(k)))
			}
		}
	}
	return ""
}

// jsonProblem describes a decode error without echoing Go type names.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q has the wrong type", typ.Field)
		}
		return "the body must be a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	default:
		msg := err.Error()
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return msg
	}
}

// audited runs op as an audited action: a pending entry first (if that
// fails, op does not run and the client gets 503), then op, then the
// outcome. It returns op's error.
func (h *Handler) audited(c *gin.Context, action, index string, params map[string]any, op func(ctx context.Context) error) error {
	// The subject is escaped (control characters quoted) and bounded
	// before it reaches the audit row or the log.
	actor := audit.SafeActor(auth.Subject(c))
	id, err := h.audit.Begin(c.Request.Context(), actor, action, index, params, httpserver.RequestID(c))
	if err != nil {
		h.logger.ErrorContext(c.Request.Context(), "audit log unavailable", slog.String("action", action), slog.String("index", index), slog.Any("error", err))
		return fmt.Errorf("%w: %w", errDatabase, err)
	}
	opErr := op(c.Request.Context())
	outcome, status, msg := audit.OutcomeSuccess, http.StatusOK, ""
	if opErr != nil {
		outcome = audit.OutcomeFailure
		status, _, msg = statusOf(opErr)
		if status >= 500 {
			msg = opErr.Error()
		}
	} else if action == audit.ActionCreate {
		status = http.StatusCreated
	}
	// The operation has happened: record it even if the client went away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 5*time.Second)
	defer cancel()
	if err := h.audit.Finish(ctx, id, outcome, status, msg); err != nil {
		h.logger.ErrorContext(c.Request.Context(), "audit entry left pending", slog.Int64("audit_id", id), slog.Any("error", err))
	}
	h.logger.InfoContext(c.Request.Context(), "index operation", slog.String("action", action), slog.String("index", index),
		slog.String("actor", actor), slog.String("outcome", outcome), slog.Int("status", status))
	return opErr
}

// checkMutable refuses protected indices for create, delete and refresh.
func (h *Handler) checkMutable(name string) error {
	if err := ValidateIndexName(name); err != nil {
		return err
	}
	if h.protected[name] {
		return fmt.Errorf("%w: index %s is protected and cannot be changed through this API", errProtected, name)
	}
	return nil
}
