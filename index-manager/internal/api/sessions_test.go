package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/clock"
)

// signIn logs user in and returns the login's answer.
func (b *bundle) signIn(user, password string) api.LoginResponse {
	b.t.Helper()
	r := b.login(user, password, "", nil)
	if r.Status != http.StatusOK {
		b.t.Fatalf("login %s: %d %s", user, r.Status, r.Body)
	}
	var lr api.LoginResponse
	r.decode(b.t, &lr)
	return lr
}

func (b *bundle) refresh(token string) (response, api.LoginResponse) {
	b.t.Helper()
	r := b.do(request{Method: "POST", Path: "/api/v1/auth/refresh", Token: ptr(""), Body: map[string]string{"refresh_token": token}})
	var lr api.LoginResponse
	if r.Status == http.StatusOK {
		r.decode(b.t, &lr)
	}
	return r, lr
}

func withRole(t *testing.T, user string, role auth.Role) api.RoleAccount {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(user+" password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return api.RoleAccount{Account: api.Account{User: user, PasswordHash: string(hash)}, Role: role}
}

// A refresh token buys a new access token and a new refresh token; the
// spent one is refused, and presenting it again revokes the session (it
// was copied), so the thief's and the owner's next refreshes both fail.
func TestRefreshRotatesAndDetectsACopy(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	first := b.signIn(adminUser, adminPassword)
	r, second := b.refresh(first.RefreshToken)
	if r.Status != http.StatusOK || second.RefreshToken == "" || second.RefreshToken == first.RefreshToken || second.SessionID != first.SessionID {
		t.Fatalf("refresh: %d %s", r.Status, r.Body)
	}
	if claims, err := b.authn.Verify(second.Token); err != nil || claims.Subject != adminUser || claims.Role != auth.RoleAdmin {
		t.Fatalf("refreshed token: %v %+v", err, claims)
	}
	if r := b.do(request{Method: "GET", Path: "/api/v1/auth/me", Token: &second.Token}); r.Status != http.StatusOK {
		t.Fatalf("me with the refreshed token: %d %s", r.Status, r.Body)
	}
	// The spent token again: refused, and the session is revoked.
	if r, _ := b.refresh(first.RefreshToken); r.Status != http.StatusUnauthorized || r.errorCode(t) != "session_ended" {
		t.Fatalf("spent refresh token: %d %s, want 401 session_ended", r.Status, r.Body)
	}
	if r, _ := b.refresh(second.RefreshToken); r.Status != http.StatusUnauthorized {
		t.Fatalf("the live token of a session whose spent token was replayed: %d %s, want 401", r.Status, r.Body)
	}
	// An unknown token, a missing one, a form post.
	if r, _ := b.refresh("not-a-token"); r.Status != http.StatusUnauthorized {
		t.Errorf("unknown refresh token: %d", r.Status)
	}
	if r := b.do(request{Method: "POST", Path: "/api/v1/auth/refresh", Token: ptr(""), Body: `{}`}); r.Status != http.StatusBadRequest {
		t.Errorf("no refresh token: %d %s, want 400", r.Status, r.Body)
	}
	if r := b.do(request{Method: "POST", Path: "/api/v1/auth/refresh", Token: ptr(""), Body: "refresh_token=x",
		Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}); r.Status != http.StatusUnsupportedMediaType {
		t.Errorf("form refresh: %d %s, want 415", r.Status, r.Body)
	}
}

// Logout ends the session: its refresh token is refused afterwards, and
// another session of the same user goes on.
func TestLogoutEndsItsSessionOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	laptop, phone := b.signIn(adminUser, adminPassword), b.signIn(adminUser, adminPassword)
	if r := b.do(request{Method: "POST", Path: "/api/v1/auth/logout", Token: ptr(""), Body: map[string]string{"refresh_token": laptop.RefreshToken}}); r.Status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", r.Status, r.Body)
	}
	if r, _ := b.refresh(laptop.RefreshToken); r.Status != http.StatusUnauthorized {
		t.Errorf("refresh after logout: %d, want 401", r.Status)
	}
	if r, _ := b.refresh(phone.RefreshToken); r.Status != http.StatusOK {
		t.Errorf("the other session after logout: %d %s, want 200", r.Status, r.Body)
	}
	// A second logout with the same token ends nothing and says so alike.
	if r := b.do(request{Method: "POST", Path: "/api/v1/auth/logout", Token: ptr(""), Body: map[string]string{"refresh_token": laptop.RefreshToken}}); r.Status != http.StatusNoContent {
		t.Errorf("second logout: %d", r.Status)
	}
}

// An admin lists the live sessions and revokes every session of a user,
// or one by id: their refresh tokens are refused at once, the answer says
// when their access tokens end, the revocation is audited, and other
// users' sessions go on. An operator may do none of it.
func TestAdminRevokesSessions(t *testing.T) {
	t.Parallel()
	alice, carl := withRole(t, "alice", auth.RoleOperator), withRole(t, "carl", auth.RoleViewer)
	b := setup(t, options{accounts: []api.RoleAccount{alice, carl}})
	a1, a2 := b.signIn("alice", "alice password"), b.signIn("alice", "alice password")
	c1 := b.signIn("carl", "carl password")

	r := b.do(request{Method: "GET", Path: "/api/v1/auth/sessions"})
	var list api.SessionsResponse
	r.decode(t, &list)
	users := map[string]int{}
	for _, s := range list.Sessions {
		users[s.User]++
	}
	if r.Status != http.StatusOK || users["alice"] != 2 || users["carl"] != 1 || strings.Contains(string(r.Body), a1.RefreshToken) {
		t.Fatalf("sessions: %d %s", r.Status, r.Body)
	}
	if r := b.do(request{Method: "POST", Path: "/api/v1/auth/sessions/_revoke", Token: &a1.Token, Body: map[string]string{"user": "carl"}}); r.Status != http.StatusForbidden {
		t.Errorf("an operator revoking: %d, want 403", r.Status)
	}
	if r := b.do(request{Method: "GET", Path: "/api/v1/auth/sessions", Token: &c1.Token}); r.Status != http.StatusForbidden {
		t.Errorf("a viewer listing sessions: %d, want 403", r.Status)
	}

	before := time.Now()
	r = b.do(request{Method: "POST", Path: "/api/v1/auth/sessions/_revoke", Body: map[string]string{"user": "alice"}})
	var rev api.RevokeResponse
	r.decode(t, &rev)
	if r.Status != http.StatusOK || rev.Revoked != 2 || rev.AccessEndsBy.Before(before.Add(api.TokenTTLDefault-time.Second)) {
		t.Fatalf("revoke alice: %d %s", r.Status, r.Body)
	}
	for _, tok := range []string{a1.RefreshToken, a2.RefreshToken} {
		if r, _ := b.refresh(tok); r.Status != http.StatusUnauthorized {
			t.Errorf("alice's refresh after the revocation: %d, want 401", r.Status)
		}
	}
	if r, _ := b.refresh(c1.RefreshToken); r.Status != http.StatusOK {
		t.Errorf("carl's refresh after alice's revocation: %d %s", r.Status, r.Body)
	}
	// One by id; an unknown or malformed id is 404.
	c2 := b.signIn("carl", "carl password")
	if r := b.do(request{Method: "DELETE", Path: "/api/v1/auth/sessions/" + c2.SessionID}); r.Status != http.StatusOK {
		t.Fatalf("revoke one session: %d %s", r.Status, r.Body)
	}
	if r, _ := b.refresh(c2.RefreshToken); r.Status != http.StatusUnauthorized {
		t.Errorf("refresh of the revoked session: %d, want 401", r.Status)
	}
	for _, id := range []string{c2.SessionID, "00000000-0000-0000-0000-000000000000", "nope"} {
		if r := b.do(request{Method: "DELETE", Path: "/api/v1/auth/sessions/" + id}); r.Status != http.StatusNotFound {
			t.Errorf("revoke %s again: %d, want 404", id, r.Status)
		}
	}
	var revocations int
	if err := b.db.QueryRow(`SELECT COUNT(*) FROM audit_log WHERE route LIKE '/api/v1/auth/sessions%' AND method <> 'GET' AND actor = $1 AND outcome = 'success'`,
		adminUser).Scan(&revocations); err != nil {
		t.Fatal(err)
	}
	if revocations != 2 {
		t.Errorf("%d revocations in the audit log, want 2", revocations)
	}
}

// A refresh carries the account's role of the moment, and an account
// removed from the configuration gets no new token: a service restarted
// with other accounts over the same database.
func TestRefreshFollowsTheAccounts(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Now())
	b := setup(t, options{accounts: []api.RoleAccount{withRole(t, "dora", auth.RoleOperator), withRole(t, "ed", auth.RoleViewer)}, clock: clk})
	dora, ed := b.signIn("dora", "dora password"), b.signIn("ed", "ed password")
	restarted := b.remount(options{accounts: []api.RoleAccount{withRole(t, "dora", auth.RoleViewer)}, clock: clk})
	r, next := restarted.refresh(dora.RefreshToken)
	if r.Status != http.StatusOK || next.Role != auth.RoleViewer {
		t.Fatalf("dora's refresh after her role changed: %d %s, want 200 with role viewer", r.Status, r.Body)
	}
	if r, _ := restarted.refresh(ed.RefreshToken); r.Status != http.StatusUnauthorized {
		t.Errorf("ed's refresh after his account was removed: %d %s, want 401", r.Status, r.Body)
	}
	// The session ends at its expiry whatever the refreshes.
	clk.Advance(api.SessionTTLDefault + time.Second)
	if r, _ := restarted.refresh(next.RefreshToken); r.Status != http.StatusUnauthorized {
		t.Errorf("refresh after the session's end: %d, want 401", r.Status)
	}
}
