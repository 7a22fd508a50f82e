package api_test

import (
	"testing"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth/authtest"
)

// TestRoleMatrix calls every route with a token of every role and checks
// the answers against the policy, the docs' matrix against the routes, and
// that every call to a mutating route was audited.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	authtest.CheckService(t, b.router, b.authn, api.APIPolicy(), b.db, "../../../docs/roles.md", "index-manager")
}
