package api_test

import (
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth"
)

func hashOf(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// TestLoginCarriesTheAccountsRole: accounts of the accounts file sign in
// with their role in the token, the login response and GET /auth/me; the
// admin account is admin; a viewer's token cannot create an index.
func TestLoginCarriesTheAccountsRole(t *testing.T) {
	t.Parallel()
	file := "# name role hash\n\nvera viewer " + hashOf(t, "vera-pw") + "\n\totto\toperator\t" + hashOf(t, "otto-pw") + "\n"
	accounts, err := api.ParseAccounts(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, options{accounts: accounts})
	for _, c := range []struct {
		user, password string
		role           auth.Role
	}{{"vera", "vera-pw", auth.RoleViewer}, {"otto", "otto-pw", auth.RoleOperator}, {adminUser, adminPassword, auth.RoleAdmin}} {
		r := b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Body: map[string]string{"username": c.user, "password": c.password}})
		if r.Status != http.StatusOK {
			t.Fatalf("login %s: %d %s", c.user, r.Status, r.Body)
		}
		var lr api.LoginResponse
		r.decode(t, &lr)
		claims, err := b.authn.Verify(lr.Token)
		if err != nil || lr.Role != c.role || claims.Role != c.role || claims.Subject != c.user {
			t.Fatalf("login %s: role %q, claims %+v %v; want %s", c.user, lr.Role, claims, err, c.role)
		}
		r = b.do(request{Method: "GET", Path: "/api/v1/auth/me", Token: &lr.Token})
		var me api.MeResponse
		r.decode(t, &me)
		if r.Status != http.StatusOK || me != (api.MeResponse{User: c.user, Role: c.role, ReadsBodies: true}) {
			t.Fatalf("me of %s: %d %+v", c.user, r.Status, me)
		}
		if c.role == auth.RoleViewer {
			r := b.do(request{Method: "POST", Path: "/api/v1/indices", Token: &lr.Token, Body: map[string]any{"name": b.prefix + "_v_raw_content"}})
			if r.Status != http.StatusForbidden || r.errorCode(t) != "forbidden" {
				t.Fatalf("create as viewer: %d %s, want 403 forbidden", r.Status, r.Body)
			}
		}
	}
	// Another account's password does not open an account.
	if r := b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Body: map[string]string{"username": "vera", "password": "otto-pw"}}); r.Status != http.StatusUnauthorized {
		t.Fatalf("vera with otto's password: %d", r.Status)
	}
}

// TestLoginWithTheAccountsFileOnly: without an admin account, the file's
// accounts still sign in.
func TestLoginWithTheAccountsFileOnly(t *testing.T) {
	t.Parallel()
	accounts, err := api.ParseAccounts(strings.NewReader("otto operator " + hashOf(t, "otto-pw")))
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, options{noAccount: true, accounts: accounts})
	r := b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Body: map[string]string{"username": "otto", "password": "otto-pw"}})
	var lr api.LoginResponse
	r.decode(t, &lr)
	if r.Status != http.StatusOK || lr.Role != auth.RoleOperator {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
}

func TestParseAccountsNamesEveryBadLine(t *testing.T) {
	t.Parallel()
	good := hashOf(t, "pw")
	file := strings.Join([]string{
		"alice operator " + good,
		"bob viewer",
		"carol root " + good,
		"dave admin plaintext",
		"alice viewer " + good,
		"e\x1bve viewer " + good,
	}, "\n")
	_, err := api.ParseAccounts(strings.NewReader(file))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`line 2: want "name role bcrypt-hash", got 2 fields`,
		`line 3: unknown role "root" (want viewer, operator or admin)`,
		"line 4: the password hash of dave is not a bcrypt hash",
		"line 5: alice is already on line 1",
		"line 6: name",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
