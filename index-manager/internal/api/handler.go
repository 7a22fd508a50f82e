// Package api is the index-manager's REST API (index-manager/README.md): index listing,
// inspection, documents, ad-hoc queries, create, delete and refresh behind
// the safety rules of safety.go, the audit log, and operator login.
package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/index-manager/internal/audit"
	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/index-manager/internal/openapi"
	"github.com/north-cloud/index-manager/internal/sessions"
	shared "github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/httpserver"
)

// QueryTimeoutDefault bounds one search through the API.
const QueryTimeoutDefault = 10 * time.Second

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
	Audit *audit.Repository
	// Meter counts audit writes that failed. Defaults to a no-op.
	Meter metric.Meter
	// Rates computes indexing and search rates. Required.
	Rates RateSource
	// Auth verifies bearer tokens and issues them at login. Required.
	Auth *auth.Authenticator
	// Account is the admin login (role admin); with Accounts empty too,
	// login is disabled.
	Account Account
	// Accounts are more logins with their roles (INDEX_MANAGER_ACCOUNTS_FILE).
	Accounts []RoleAccount
	// LoginLimits bound failed logins per (user name, client address) and
	// per client address.
	LoginLimits LoginLimits
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// address the login limits count (the dashboard server). Nil trusts no
	// one: the TCP peer is the client.
	TrustedProxies []netip.Prefix
	// Clock is read by the login limits; nil is the system clock.
	Clock clock.Clock
	// TokenTTL is the lifetime of access tokens. Defaults to TokenTTLDefault.
	TokenTTL time.Duration
	// SessionTTL is how long a login's session lasts (its refresh token
	// buys access tokens until then). Defaults to SessionTTLDefault.
	SessionTTL time.Duration
	// Sessions keeps the login sessions. Required.
	Sessions *sessions.Repository
	// CursorKey signs documents cursors. Required, at least 32 bytes.
	CursorKey []byte
	// QueryTimeout bounds each search. Defaults to QueryTimeoutDefault.
	QueryTimeout time.Duration
	// ProtectedIndices cannot be created, deleted or refreshed, in addition
	// to DefaultProtectedIndices.
	ProtectedIndices []string
	// Reads bound the document reads (list, get, query, count): answer
	// size, and reads at once per caller and in all. Zero values are the
	// defaults.
	Reads ReadLimits
	// MessageBodies says whether viewers read the documents' bodies
	// (VIEWER_MESSAGE_BODIES). Empty is BodiesShown.
	MessageBodies MessageBodies
	// Logger is required.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	c.TokenTTL = cmp.Or(c.TokenTTL, TokenTTLDefault)
	c.SessionTTL = cmp.Or(c.SessionTTL, SessionTTLDefault)
	c.QueryTimeout = cmp.Or(c.QueryTimeout, QueryTimeoutDefault)
	c.LoginLimits.setDefaults()
	c.Reads.setDefaults()
}

func (c *Config) validate() error {
	var errs []error
	if c.Indices == nil || c.Audit == nil || c.Rates == nil || c.Auth == nil || c.Sessions == nil || c.Logger == nil {
		errs = append(errs, errors.New("Indices, Audit, Rates, Auth, Sessions and Logger are required"))
	}
	if len(c.CursorKey) < 32 {
		errs = append(errs, errors.New("CursorKey must be at least 32 bytes"))
	}
	if c.TokenTTL < 0 || c.QueryTimeout < 0 || c.SessionTTL < 0 {
		errs = append(errs, errors.New("TokenTTL, SessionTTL and QueryTimeout must be positive"))
	}
	if c.SessionTTL < c.TokenTTL {
		errs = append(errs, fmt.Errorf("SessionTTL (%s) must be at least TokenTTL (%s)", c.SessionTTL, c.TokenTTL))
	}
	if err := c.Account.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Account: %w", err))
	}
	if err := validateAccounts(c.Account, c.Accounts); err != nil {
		errs = append(errs, fmt.Errorf("Accounts: %w", err))
	}
	if err := c.LoginLimits.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("LoginLimits: %w", err))
	}
	if err := c.Reads.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Reads: %w", err))
	}
	return errors.Join(errs...)
}

// Handler serves the API.
type Handler struct {
	store          *indices.Store
	audit          *audit.Repository
	rates          RateSource
	auth           *auth.Authenticator
	accounts       []RoleAccount
	dummyHash      []byte
	pairFailures   *failureLimiter
	addrFailures   *failureLimiter
	trustedProxies []netip.Prefix
	tokenTTL       time.Duration
	sessionTTL     time.Duration
	sessions       *sessions.Repository
	clock          clock.Clock
	cursors        cursorCodec
	queryTimeout   time.Duration
	maxResultBytes int64
	reads          *readSlots
	protected      map[string]bool
	bodies         MessageBodies
	logger         *slog.Logger
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
	doc, err := openapi.Load()
	if err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	accounts := accountsOf(cfg.Account, cfg.Accounts)
	var first Account
	if len(accounts) > 0 {
		first = accounts[0].Account
	}
	dummy, err := dummyHashFor(first)
	if err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	h := &Handler{
		store: cfg.Indices, audit: cfg.Audit, rates: cfg.Rates, auth: cfg.Auth, accounts: accounts, dummyHash: dummy,
		pairFailures:   newFailureLimiter(cfg.LoginLimits.PerUser, cfg.LoginLimits.MaxDelay, cfg.LoginLimits.Window, cfg.Clock),
		addrFailures:   newFailureLimiter(cfg.LoginLimits.PerAddress, cfg.LoginLimits.MaxDelay, cfg.LoginLimits.Window, cfg.Clock),
		trustedProxies: cfg.TrustedProxies,
		tokenTTL:       cfg.TokenTTL, sessionTTL: cfg.SessionTTL, sessions: cfg.Sessions, clock: cfg.Clock,
		cursors: cursorCodec{key: cfg.CursorKey}, queryTimeout: cfg.QueryTimeout,
		maxResultBytes: cfg.Reads.MaxResultBytes, reads: newReadSlots(cfg.Reads),
		bodies: cfg.MessageBodies, protected: map[string]bool{}, logger: cfg.Logger.With(slog.String("component", "api")),
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
	// Refresh and logout carry the refresh token, not an access token
	// (which may have expired).
	engine.POST("/api/v1/auth/refresh", checkText, h.refresh)
	engine.POST("/api/v1/auth/logout", checkText, h.logout)
	// Every route is audited, checked against the role policy and behind
	// the bearer token; GET /api/v1/audit lists the log.
	v1, err := shared.Group(engine, "/api/v1", shared.GroupConfig{
		Auth: cfg.Auth, Policy: APIPolicy(), Store: cfg.Audit, List: auditListOptions(),
		Meter: cfg.Meter, MetricPrefix: "index_manager", Logger: cfg.Logger,
	}, checkText)
	if err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	v1.GET("/auth/me", h.me)
	v1.GET("/auth/sessions", h.listSessions)
	v1.DELETE("/auth/sessions/:id", h.revokeSession)
	v1.POST("/auth/sessions/_revoke", h.revokeUserSessions)
	v1.GET("/openapi.json", gin.WrapH(doc))
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
	v1.GET("/aliases", h.listAliases)
	v1.PUT("/indices/:name/aliases/:alias", h.putAlias)
	v1.DELETE("/indices/:name/aliases/:alias", h.deleteAlias)
	v1.POST("/indices/:name/_forcemerge", h.forceMerge)
	v1.GET("/tasks/:task", h.getTask)
	v1.GET("/content/_count", h.countContent)
	v1.POST("/audit/silences", h.recordSilence)
	return nil
}

// APIPolicy is the minimum role of the index-manager's routes
// (docs/roles.md): reading needs viewer; creating, deleting, refreshing and
// force-merging an index, changing its aliases, and listing or revoking
// sessions need admin; a query is a read sent by POST.
func APIPolicy() auth.Policy {
	return auth.Policy{
		Admin: []auth.Route{
			{Method: http.MethodPost, Path: "/api/v1/indices"},
			{Method: http.MethodDelete, Path: "/api/v1/indices/:name"},
			{Method: http.MethodPost, Path: "/api/v1/indices/:name/_refresh"},
			{Method: http.MethodPut, Path: "/api/v1/indices/:name/aliases/:alias"},
			{Method: http.MethodDelete, Path: "/api/v1/indices/:name/aliases/:alias"},
			{Method: http.MethodPost, Path: "/api/v1/indices/:name/_forcemerge"},
			{Method: http.MethodGet, Path: "/api/v1/auth/sessions"},
			{Method: http.MethodDelete, Path: "/api/v1/auth/sessions/:id"},
			{Method: http.MethodPost, Path: "/api/v1/auth/sessions/_revoke"},
		},
		Read: []auth.Route{{Method: http.MethodPost, Path: "/api/v1/indices/:name/_query"}},
	}
}

// bindJSON decodes the body under the shared kit's strict rule
// (httpserver.DecodeJSON: exactly one object, no unknown fields, no
// trailing data, not null, no NUL or invalid UTF-8), with numbers kept as
// json.Number and null values allowed inside (query and settings values
// are checked by their allowlists), answering 400 or 413 itself.
func (h *Handler) bindJSON(c *gin.Context, v any) bool {
	return httpserver.DecodeJSONWith(c, v, httpserver.JSONOptions{UseNumber: true, AllowNull: true})
}

// checkText refuses a request whose path or query string holds a NUL
// character or invalid UTF-8, or whose query string is malformed, with 400
// invalid_text. The shared server applies the same rule to every request;
// it is kept on these routes so that the API holds it wherever it is
// mounted.
func checkText(c *gin.Context) {
	if msg := httpserver.URLTextProblem(c.Request.URL); msg != "" {
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeInvalidText, msg)
		return
	}
	c.Next()
}

// audited runs op as an audited action: a pending entry first (if that
// fails, op does not run and the client gets 503), then op, then the
// outcome. It returns op's error.
func (h *Handler) audited(c *gin.Context, action, index string, params map[string]any, op func(ctx context.Context) error) error {
	// The subject is escaped (control characters quoted) and bounded
	// before it reaches the audit row or the log.
	actor := audit.SafeActor(auth.Subject(c))
	id, err := h.audit.Begin(c.Request.Context(), audit.Entry{Actor: actor, Role: string(auth.RoleOf(c)),
		Method: c.Request.Method, Route: c.FullPath(), Action: action, Target: index, Parameters: params,
		RequestID: httpserver.RequestID(c)})
	// This entry is the request's: the audit middleware does not write
	// another.
	shared.MarkRecorded(c)
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
	} else if action == audit.ActionForceMerge {
		status = http.StatusAccepted
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
