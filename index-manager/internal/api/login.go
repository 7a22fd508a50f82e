package api

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// TokenTTLDefault is the lifetime of an access token issued by login or
// refresh: how long a revoked session may still act.
const TokenTTLDefault = 15 * time.Minute

// Account is the operator account that may log in. An empty Account
// disables login (it answers 503); tokens issued elsewhere with the shared
// secret still work.
type Account struct {
	// User is the login name, also the subject of issued tokens and the
	// actor in the audit log.
	User string
	// PasswordHash is a bcrypt hash (index-manager hash-password makes one).
	PasswordHash string
}

// Configured reports whether login is enabled.
func (a Account) Configured() bool { return a.User != "" && a.PasswordHash != "" }

// Validate checks that both or neither field is set and that the hash is a
// bcrypt hash, so a typo stops the service at start-up rather than making
// every login fail.
func (a Account) Validate() error {
	if a.User == "" && a.PasswordHash == "" {
		return nil
	}
	if a.User == "" || a.PasswordHash == "" {
		return errors.New("admin user and password hash must be set together")
	}
	if _, err := bcrypt.Cost([]byte(a.PasswordHash)); err != nil {
		return fmt.Errorf("password hash is not a bcrypt hash: %w", err)
	}
	return nil
}

// dummyHashFor returns the hash compared against when the user name is
// wrong: a hash of a random password with the same bcrypt cost as the
// account's, so an unknown user costs the same work as a wrong password
// and timing does not tell which user names exist. It is nil when login is
// disabled.
func dummyHashFor(a Account) ([]byte, error) {
	if !a.Configured() {
		return nil, nil
	}
	cost, err := bcrypt.Cost([]byte(a.PasswordHash))
	if err != nil {
		return nil, fmt.Errorf("password hash is not a bcrypt hash: %w", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("dummy password: %w", err)
	}
	return bcrypt.GenerateFromPassword([]byte(base64.RawStdEncoding.EncodeToString(secret)), cost)
}

// LoginLimits bound failed logins (see failureLimiter). Zero fields take
// the defaults.
type LoginLimits struct {
	// PerUser is the number of failures per (user name, client address)
	// answered at once; each further one makes that pair wait longer.
	// Defaults to LoginFailuresPerUserDefault.
	PerUser int
	// PerAddress is the same per client address, whatever the user names.
	// Defaults to LoginFailuresPerAddressDefault.
	PerAddress int
	// Window is how long a key's failures are remembered after its last
	// one. Defaults to LoginWindowDefault.
	Window time.Duration
	// MaxDelay is the longest wait between two attempts of one key.
	// Defaults to LoginMaxDelayDefault.
	MaxDelay time.Duration
}

func (l *LoginLimits) setDefaults() {
	l.PerUser = cmp.Or(l.PerUser, LoginFailuresPerUserDefault)
	l.PerAddress = cmp.Or(l.PerAddress, LoginFailuresPerAddressDefault)
	l.Window = cmp.Or(l.Window, LoginWindowDefault)
	l.MaxDelay = cmp.Or(l.MaxDelay, LoginMaxDelayDefault)
}

// Validate checks that the limits are positive and that a key is not
// forgotten before its longest delay is over.
func (l LoginLimits) Validate() error {
	if l.PerUser < 0 || l.PerAddress < 0 || l.Window < 0 || l.MaxDelay < 0 {
		return errors.New("login limits must be positive")
	}
	if l.MaxDelay < LoginFirstDelay || l.MaxDelay > l.Window {
		return fmt.Errorf("the longest login delay must be from %s to the failure window %s (got %s)", LoginFirstDelay, l.Window, l.MaxDelay)
	}
	return nil
}

// maxUsernameBytes bounds the user name of a login request.
const maxUsernameBytes = 255

// LoginRequest is the body of POST /api/v1/auth/login.
type LoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// LoginResponse carries the issued bearer token and the session's refresh
// token.
type LoginResponse struct {
	Token     string    `json:"token"`
	TokenType string    `json:"token_type"`
	ExpiresAt time.Time `json:"expires_at"`
	// Role is the role the token carries.
	Role auth.Role `json:"role"`
	// RefreshToken buys the next access token (POST /auth/refresh) until
	// SessionExpiresAt; each refresh answers a new one and the old one is
	// spent.
	RefreshToken     string    `json:"refresh_token"`
	SessionID        string    `json:"session_id"`
	SessionExpiresAt time.Time `json:"session_expires_at"`
}

// isJSON reports whether a Content-Type header names JSON (parameters
// such as charset allowed). Login takes JSON only: a browser sends a
// cross-site form or text/plain post without asking, but JSON only after a
// CORS preflight this API never grants, so no page the operator visits can
// spend the operator's login budget.
func isJSON(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "application/json"
}

func (h *Handler) login(c *gin.Context) {
	if !isJSON(c.GetHeader("Content-Type")) {
		httpserver.WriteError(c, http.StatusUnsupportedMediaType, "unsupported_media_type",
			"the login body must be JSON (Content-Type: application/json)")
		return
	}
	if len(h.accounts) == 0 {
		httpserver.WriteError(c, http.StatusServiceUnavailable, "login_not_configured",
			"login is disabled: set INDEX_MANAGER_ADMIN_USER and INDEX_MANAGER_ADMIN_PASSWORD_HASH")
		return
	}
	var req LoginRequest
	if !h.bindJSON(c, &req) {
		return
	}
	if req.Username == "" || req.Password == "" {
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalid, "username and password are required")
		return
	}
	if len(req.Username) > maxUsernameBytes {
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalid, fmt.Sprintf("username must be at most %d bytes", maxUsernameBytes))
		return
	}
	addr := clientAddr(c.Request, h.trustedProxies)
	// NUL cannot be in a user name (checkText refuses it), so the pair key
	// is unambiguous.
	pair := req.Username + "\x00" + addr
	// Each attempt counts as a failure of its (user name, address) pair and
	// of its address from the start (so concurrent attempts cannot all
	// slip through) and is taken back if it succeeds. A pair or address
	// that must wait is refused before any bcrypt work, even with the right
	// password; no other address is slowed down.
	wait, ok := h.pairFailures.take(pair)
	if ok {
		if wait, ok = h.addrFailures.take(addr); !ok {
			h.pairFailures.forgive(pair)
		}
	}
	if !ok {
		secs := max(int(math.Ceil(wait.Seconds())), 1)
		h.logger.WarnContext(c.Request.Context(), "login refused: too many failures", "client_ip", addr, "retry_after_seconds", secs, "request_id", httpserver.RequestID(c))
		c.Header("Retry-After", strconv.Itoa(secs))
		httpserver.WriteError(c, http.StatusTooManyRequests, "too_many_attempts",
			fmt.Sprintf("too many failed logins from this address; try again in %d seconds", secs))
		return
	}
	account, userOK := lookupAccount(h.accounts, req.Username)
	hash := []byte(account.PasswordHash)
	if !userOK {
		hash = h.dummyHash
	}
	passOK := bcrypt.CompareHashAndPassword(hash, []byte(req.Password)) == nil
	if !userOK || !passOK {
		h.logger.WarnContext(c.Request.Context(), "login refused", "client_ip", addr, "request_id", httpserver.RequestID(c))
		c.Header("WWW-Authenticate", "Bearer")
		httpserver.WriteError(c, http.StatusUnauthorized, "invalid_credentials", "invalid username or password")
		return
	}
	h.pairFailures.reset(pair)
	h.addrFailures.forgive(addr)
	ctx := c.Request.Context()
	now := h.clock.Now()
	s, refresh, err := h.sessions.Start(ctx, account.User, string(account.Role), addr, now, now.Add(h.sessionTTL))
	if err != nil {
		h.fail(c, errors.Join(errDatabase, err))
		return
	}
	if _, err := h.sessions.Prune(ctx, now.Add(-sessionsKept)); err != nil {
		h.logger.WarnContext(ctx, "prune ended sessions", "error", err)
	}
	h.logger.InfoContext(ctx, "login", "user", account.User, "role", account.Role, "session", s.ID, "client_ip", addr, "request_id", httpserver.RequestID(c))
	h.issue(c, s, refresh)
}
