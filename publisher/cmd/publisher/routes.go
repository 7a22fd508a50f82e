package main

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/publisher/internal/api"
)

// apiPolicy is the minimum role of the publisher's routes (docs/roles.md):
// reading needs viewer, outbox retries operator; no route needs admin.
func apiPolicy() auth.Policy { return auth.Policy{} }

// mountAPI adds the publisher's /api/v1 routes to router: the audit log and
// the outbox API, behind the bearer token, the role policy and the audit
// middleware (audit.Group). g.Policy is set here.
func mountAPI(router gin.IRouter, g audit.GroupConfig, h *api.Handler) error {
	g.Policy = apiPolicy()
	v1, err := audit.Group(router, "/api/v1", g)
	if err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	if err := h.Register(v1); err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	return nil
}
