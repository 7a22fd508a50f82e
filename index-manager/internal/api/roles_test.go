package api_test

import (
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
)

// TestRoleMatrix calls every route with a token of every role and checks
// the answers against the policy, the docs' matrix against the routes, and
// that every call to a mutating route was audited.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	token := func(r auth.Role) string {
		tok, _, err := b.authn.Issue(string(r)+"@example.org", r, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	observed := authtest.CheckRoutes(t, b.router, b.router.Routes(), api.APIPolicy(), token)
	authtest.CheckMatrix(t, "../../../docs/roles.md", "index-manager", observed)
	authtest.CheckAudited(t, b.db, observed)
}
