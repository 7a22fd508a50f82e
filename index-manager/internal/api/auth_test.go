package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/infrastructure/auth"
)

// signed returns an HS256 token with the given claims and secret.
func signed(t *testing.T, secret string, method jwt.SigningMethod, claims jwt.RegisteredClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBadTokensGet401AndChangeNothing: without a token, or with an expired,
// badly signed or otherwise forged one, every route answers 401 and no
// index is created, deleted or refreshed, and nothing is audited.
func TestBadTokensGet401AndChangeNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	victim := b.prefix + "_victim_raw_content"
	b.createIndex(victim)
	fresh := b.prefix + "_fresh_raw_content"
	now := time.Now()
	valid := jwt.RegisteredClaims{Issuer: auth.IssuerDefault, Subject: "mallory", IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}
	expired := valid
	expired.IssuedAt = jwt.NewNumericDate(now.Add(-3 * time.Hour))
	expired.ExpiresAt = jwt.NewNumericDate(now.Add(-2 * time.Hour))
	noExp := valid
	noExp.ExpiresAt = nil
	tokens := map[string]string{
		"none":           "",
		"expired":        signed(t, b.secret, jwt.SigningMethodHS256, expired),
		"other secret":   signed(t, randomSecret(), jwt.SigningMethodHS256, valid),
		"HS512":          signed(t, b.secret, jwt.SigningMethodHS512, valid),
		"no expiry":      signed(t, b.secret, jwt.SigningMethodHS256, noExp),
		"garbage":        "not.a.token",
		"alg none":       "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJtYWxsb3J5In0.",
		"tampered claim": b.token[:len(b.token)-4] + "AAAA",
	}
	for what, token := range tokens {
		for _, call := range []request{
			{Method: "DELETE", Path: "/api/v1/indices/" + victim + "?confirm=true"},
			{Method: "POST", Path: "/api/v1/indices", Body: map[string]any{"name": fresh}},
			{Method: "POST", Path: "/api/v1/indices/" + victim + "/_refresh"},
			{Method: "GET", Path: "/api/v1/indices"},
			{Method: "GET", Path: "/api/v1/audit"},
			{Method: "GET", Path: "/api/v1/openapi.json"},
		} {
			call.Token = &token
			r := b.do(call)
			if r.Status != http.StatusUnauthorized || r.errorCode(t) != "unauthorized" {
				t.Errorf("%s token, %s %s: %d %s, want 401", what, call.Method, call.Path, r.Status, r.Body)
			}
		}
	}
	if !b.exists(victim) || b.exists(fresh) {
		t.Fatal("a request with a bad token changed the indices")
	}
	if e := b.auditEntries(""); len(e) != 0 {
		t.Fatalf("a request with a bad token was audited: %+v", e)
	}
}

func TestLogin(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	r := b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Body: map[string]string{"username": adminUser, "password": adminPassword}})
	if r.Status != http.StatusOK {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	var lr api.LoginResponse
	r.decode(t, &lr)
	if lr.TokenType != "Bearer" || lr.ExpiresAt.After(time.Now().Add(api.TokenTTLDefault+time.Minute)) || lr.ExpiresAt.Before(time.Now().Add(api.TokenTTLDefault-time.Minute)) ||
		lr.RefreshToken == "" || lr.SessionExpiresAt.Before(time.Now().Add(api.SessionTTLDefault-time.Minute)) {
		t.Fatalf("login response %+v", lr)
	}
	claims, err := b.authn.Verify(lr.Token)
	if err != nil || claims.Subject != adminUser {
		t.Fatalf("issued token: %v %+v", err, claims)
	}
	if r := b.do(request{Method: "GET", Path: "/api/v1/indices?prefix=" + b.prefix, Token: &lr.Token}); r.Status != http.StatusOK {
		t.Fatalf("request with the login token: %d %s", r.Status, r.Body)
	}

	bad := []struct {
		name string
		body any
		code int
	}{
		{"wrong password", map[string]string{"username": adminUser, "password": "nope"}, http.StatusUnauthorized},
		{"unknown user", map[string]string{"username": "root", "password": adminPassword}, http.StatusUnauthorized},
		{"missing password", map[string]string{"username": adminUser}, http.StatusBadRequest},
		{"malformed JSON", `{"username":`, http.StatusBadRequest},
		{"unknown field", `{"username":"a","password":"b","admin":true}`, http.StatusBadRequest},
	}
	for _, tc := range bad {
		r := b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Body: tc.body})
		if r.Status != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, r.Status, r.Body, tc.code)
		}
	}
}

func TestLoginWithoutAccountIsDisabled(t *testing.T) {
	t.Parallel()
	b := setup(t, options{noAccount: true})
	r := b.do(request{Method: "POST", Path: "/api/v1/auth/login", Token: ptr(""), Body: map[string]string{"username": adminUser, "password": adminPassword}})
	if r.Status != http.StatusServiceUnavailable || r.errorCode(t) != "login_not_configured" {
		t.Fatalf("login without account: %d %s, want 503", r.Status, r.Body)
	}
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	r := b.do(request{Method: "GET", Path: "/api/v1/openapi.json"})
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	r.decode(t, &doc)
	if r.Status != http.StatusOK || doc.OpenAPI == "" || doc.Paths["/api/v1/indices/{name}/_query"] == nil {
		t.Fatalf("openapi.json: %d %.200s", r.Status, r.Body)
	}
}
