package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/audit"
	shared "github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
)

// AuditListResponse answers GET /api/v1/audit (served by
// infrastructure/audit.ListHandler).
type AuditListResponse = shared.ListResponse

// auditListOptions: the index-manager's action filter takes its actions,
// and its target filter is called index.
func auditListOptions() shared.ListOptions {
	return shared.ListOptions{Actions: audit.Actions(), TargetParam: "index"}
}

// MeResponse answers GET /api/v1/auth/me: who the token names and its role.
type MeResponse struct {
	User string    `json:"user"`
	Role auth.Role `json:"role"`
	// ReadsBodies is false when message bodies are hidden from this
	// caller (a viewer under VIEWER_MESSAGE_BODIES=hide).
	ReadsBodies bool `json:"reads_bodies"`
}

func (h *Handler) me(c *gin.Context) {
	c.JSON(http.StatusOK, MeResponse{User: audit.SafeActor(auth.Subject(c)), Role: auth.RoleOf(c), ReadsBodies: !h.hidesBodies(c)})
}
