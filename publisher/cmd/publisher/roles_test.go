package main

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/openapi/openapitest"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/api"
	"github.com/north-cloud/publisher/internal/openapi"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/outboxtest"
)

// The two tests below are the same as in classifier/cmd/classifier: kept apart because
// mountAPI, which they check, is each main package's own.

// TestRoleMatrix mounts the API as serve does (mountAPI) over a migrated
// database, calls every route with a token of every role and checks the
// answers against the policy, the docs' matrix against the routes, and
// that every call to a mutating route was audited.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	m := mounted(t)
	authtest.CheckService(t, m.Router, m.Auth, apiPolicy(), m.DB, "../../../docs/roles.md", "publisher")
}

// TestEmptyQueryValuesAre400 sends every query parameter the OpenAPI
// document says refuses an empty value ("?before_id=") to the API as serve
// mounts it, and wants 400 for each.
func TestEmptyQueryValuesAre400(t *testing.T) {
	t.Parallel()
	m := mounted(t)
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckEmptyQueryParams(t, m.Router, doc, authtest.Header(t, m.Auth, auth.RoleAdmin), nil)
}

// mounted is the API as serve mounts it (mountAPI) over a migrated
// database, with its authenticator and database.
func mounted(t *testing.T) authtest.Mounted {
	t.Helper()
	db, _ := outboxtest.Database(t)
	log := testenv.Logger(t)
	return authtest.Mount(t, "publisher", db, func(router gin.IRouter, g audit.GroupConfig) error {
		return mountAPI(router, g, api.New(outbox.NewRepository(db), log))
	})
}
