package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/sessions"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Sessions (docs/roles.md, "Sessions"): a login starts a session and
// answers a short access token (TokenTTL) and a refresh token; POST
// /auth/refresh exchanges the refresh token for a new pair while the
// session lives (SessionTTL from the login), with the account's role of
// the moment, and refuses it once the session was revoked, the account
// removed, or the token already used. Revoking a session therefore ends
// its access within TokenTTL.
const (
	// SessionTTLDefault is how long a session lasts from its login.
	SessionTTLDefault = 12 * time.Hour
	// sessionsKept is how long an ended session stays listed in the table
	// before it is pruned.
	sessionsKept = 7 * 24 * time.Hour
	// maxSessionsListed bounds GET /auth/sessions.
	maxSessionsListed = 500
	// codeSessionEnded answers a refresh that may not continue.
	codeSessionEnded = "session_ended"
)

// RefreshRequest is the body of POST /api/v1/auth/refresh and
// /api/v1/auth/logout.
type RefreshRequest struct {
	RefreshToken string `json:"refresh_token"`
}

// RevokeRequest is the body of POST /api/v1/auth/sessions/_revoke.
type RevokeRequest struct {
	User string `json:"user"`
}

// RevokeResponse says how many sessions a revocation ended.
type RevokeResponse struct {
	Revoked int64 `json:"revoked"`
	// AccessEndsBy is when the last access token of those sessions expires.
	AccessEndsBy time.Time `json:"access_ends_by"`
}

// SessionsResponse lists the live sessions.
type SessionsResponse struct {
	Sessions []sessions.Session `json:"sessions"`
}

// issue answers a login or refresh: an access token for the session's
// user and role, with the session's refresh token.
func (h *Handler) issue(c *gin.Context, s sessions.Session, refresh string) {
	role := auth.Role(s.Role)
	token, exp, err := h.auth.Issue(s.User, role, min(h.tokenTTL, max(time.Until(s.ExpiresAt), time.Second)))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, LoginResponse{Token: token, TokenType: "Bearer", ExpiresAt: exp.UTC(), Role: role,
		RefreshToken: refresh, SessionID: s.ID, SessionExpiresAt: s.ExpiresAt.UTC()})
}

// refreshBody reads a RefreshRequest, JSON only (as login: no cross-site
// form can post it).
func (h *Handler) refreshBody(c *gin.Context) (string, bool) {
	if !isJSON(c.GetHeader("Content-Type")) {
		httpserver.WriteError(c, http.StatusUnsupportedMediaType, "unsupported_media_type", "the body must be JSON (Content-Type: application/json)")
		return "", false
	}
	var req RefreshRequest
	if !h.bindJSON(c, &req) {
		return "", false
	}
	if req.RefreshToken == "" || len(req.RefreshToken) > 128 {
		httpserver.WriteError(c, http.StatusBadRequest, codeInvalid, "refresh_token is required (at most 128 characters)")
		return "", false
	}
	return req.RefreshToken, true
}

func (h *Handler) sessionEnded(c *gin.Context, msg string) {
	c.Header("WWW-Authenticate", "Bearer")
	httpserver.WriteError(c, http.StatusUnauthorized, codeSessionEnded, msg)
}

func (h *Handler) refresh(c *gin.Context) {
	token, ok := h.refreshBody(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	now := h.clock.Now()
	s, next, err := h.sessions.Refresh(ctx, token, now)
	if errors.Is(err, sessions.ErrInvalid) {
		h.sessionEnded(c, "the session has ended (expired, revoked or its refresh token already used); log in again")
		return
	}
	if err != nil {
		h.fail(c, errors.Join(errDatabase, err))
		return
	}
	// The account of the moment: one removed since the login ends its
	// sessions; a changed role applies from this refresh on.
	account, found := lookupAccount(h.accounts, s.User)
	if !found {
		if _, err := h.sessions.RevokeUser(ctx, s.User, "the account's removal", now); err != nil {
			h.logger.ErrorContext(ctx, "revoke the sessions of a removed account", "user", s.User, "error", err)
		}
		h.sessionEnded(c, "the account no longer exists")
		return
	}
	s.Role = string(account.Role)
	h.issue(c, s, next)
}

func (h *Handler) logout(c *gin.Context) {
	token, ok := h.refreshBody(c)
	if !ok {
		return
	}
	if _, err := h.sessions.RevokeToken(c.Request.Context(), token, h.clock.Now()); err != nil {
		h.fail(c, errors.Join(errDatabase, err))
		return
	}
	// Unknown and already ended tokens answer the same: nothing to end.
	c.Status(http.StatusNoContent)
}

func (h *Handler) listSessions(c *gin.Context) {
	live, err := h.sessions.Live(c.Request.Context(), h.clock.Now(), maxSessionsListed)
	if err != nil {
		h.fail(c, errors.Join(errDatabase, err))
		return
	}
	c.JSON(http.StatusOK, SessionsResponse{Sessions: live})
}

func (h *Handler) revokeSession(c *gin.Context) {
	now := h.clock.Now()
	ended, err := h.sessions.Revoke(c.Request.Context(), c.Param("id"), auth.Subject(c), now)
	if err != nil {
		h.fail(c, errors.Join(errDatabase, err))
		return
	}
	if !ended {
		httpserver.WriteError(c, http.StatusNotFound, codeNotFound, "no live session with this id")
		return
	}
	c.JSON(http.StatusOK, RevokeResponse{Revoked: 1, AccessEndsBy: now.Add(h.tokenTTL).UTC()})
}

func (h *Handler) revokeUserSessions(c *gin.Context) {
	var req RevokeRequest
	if !h.bindJSON(c, &req) {
		return
	}
	if req.User == "" || len(req.User) > maxUsernameBytes {
		h.fail(c, invalid("user is required (at most %d bytes)", maxUsernameBytes))
		return
	}
	now := h.clock.Now()
	n, err := h.sessions.RevokeUser(c.Request.Context(), req.User, auth.Subject(c), now)
	if err != nil {
		h.fail(c, errors.Join(errDatabase, err))
		return
	}
	c.JSON(http.StatusOK, RevokeResponse{Revoked: n, AccessEndsBy: now.Add(h.tokenTTL).UTC()})
}
