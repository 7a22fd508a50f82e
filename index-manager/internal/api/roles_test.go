package api_test

import (
	"net/http"
	"testing"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/openapi/openapitest"
)

// TestRoleMatrix calls every route with a token of every role and checks
// the answers against the policy, the docs' matrix against the routes, and
// that every call to a mutating route was audited.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	authtest.CheckService(t, b.router, b.authn, api.APIPolicy(), b.db, "../../../docs/roles.md", "index-manager")
}

// TestEmptyQueryValuesAre400 sends every query parameter the OpenAPI
// document says refuses an empty value ("?prefix=", "?before_id=") to the
// API, on an index that exists, and wants 400 for each.
func TestEmptyQueryValuesAre400(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "-empty-query_raw_content"
	b.createIndex(name)
	openapitest.CheckEmptyQueryParams(t, b.router, b.doc, http.Header{"Authorization": {"Bearer " + b.token}}, map[string]string{"name": name})
	if !b.exists(name) {
		t.Errorf("%s was deleted by DELETE ?confirm= (empty)", name)
	}
}
