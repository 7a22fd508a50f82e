package main

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/labels"
	"github.com/north-cloud/classifier/internal/modelapi"
	"github.com/north-cloud/classifier/internal/opsapi"
	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
)

// apiPolicy is the minimum role of the classifier's routes (docs/roles.md):
// reading needs viewer, every change operator. The classifier has no admin
// route; the rules dry run and the playground classify without writing
// anything, so a viewer may run them.
func apiPolicy() auth.Policy {
	return auth.Policy{Read: []auth.Route{
		{Method: http.MethodPost, Path: "/api/v1/rules/test"},
		{Method: http.MethodPost, Path: "/api/v1/classify"},
	}}
}

// mountAPI adds the classifier's /api/v1 routes to router: the audit log,
// the rules API and the operations API, behind the bearer token, the role
// policy and the audit middleware (audit.Group). g.Policy is set here.
func mountAPI(router gin.IRouter, g audit.GroupConfig, rulesDeps api.Deps, opsDeps opsapi.Deps, modelDeps modelapi.Deps, labelDeps labels.Deps) error {
	g.Policy = apiPolicy()
	v1, err := audit.Group(router, "/api/v1", g)
	if err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	if err := api.Register(v1, rulesDeps); err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	if err := opsapi.Register(v1, opsDeps); err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	if err := modelapi.Register(v1, modelDeps); err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	if err := labels.Register(v1, labelDeps); err != nil {
		return fmt.Errorf("mount api: %w", err)
	}
	return nil
}
