package api

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"

	"github.com/north-cloud/infrastructure/httpserver"
)

// TokenTTLDefault is the lifetime of a token issued by login.
const TokenTTLDefault = 12 * time.Hour

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

// dummyHash is compared against when the user name is wrong, so an unknown
// user costs the same bcrypt work as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("index-manager dummy password"), bcrypt.DefaultCost)

// LoginRequest is the body of POST /api/v1/auth/login.
type LoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// LoginResponse carries the issued bearer token.
type LoginResponse struct {
	Token     string    `json:"token"`
	TokenType string    `json:"token_type"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (h *Handler) login(c *gin.Context) {
	if !h.account.Configured() {
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
	userOK := subtle.ConstantTimeCompare([]byte(req.Username), []byte(h.account.User)) == 1
	hash := []byte(h.account.PasswordHash)
	if !userOK {
		hash = dummyHash
	}
	passOK := bcrypt.CompareHashAndPassword(hash, []byte(req.Password)) == nil
	if !userOK || !passOK {
		h.logger.WarnContext(c.Request.Context(), "login refused", "client_ip", c.ClientIP(), "request_id", httpserver.RequestID(c))
		c.Header("WWW-Authenticate", "Bearer")
		httpserver.WriteError(c, http.StatusUnauthorized, "invalid_credentials", "invalid username or password")
		return
	}
	token, exp, err := h.auth.Issue(h.account.User, h.tokenTTL)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.logger.InfoContext(c.Request.Context(), "login", "user", h.account.User, "request_id", httpserver.RequestID(c))
	c.JSON(http.StatusOK, LoginResponse{Token: token, TokenType: "Bearer", ExpiresAt: exp.UTC()})
}
