package auth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/config"
)

const secret = "0123456789abcdef0123456789abcdef" // 32 bytes

func newAuth(t *testing.T, s string) *auth.Authenticator {
	t.Helper()
	a, err := auth.New(auth.Config{Secret: s})
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return a
}

func claims(sub, iss string, exp time.Time) auth.Claims {
	now := time.Now()
	return auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: sub, Issuer: iss, Audience: jwt.ClaimStrings{auth.AudienceDefault},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp)}, Role: auth.RoleOperator}
}

// with returns c changed by f, for the token variants below.
func with(c auth.Claims, f func(*jwt.RegisteredClaims)) auth.Claims {
	f(&c.RegisteredClaims)
	return c
}

// withRole returns c with the role claim role.
func withRole(c auth.Claims, role auth.Role) auth.Claims {
	c.Role = role
	return c
}

func sign(t *testing.T, method jwt.SigningMethod, c jwt.Claims, key any) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, c).SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	a := newAuth(t, secret)
	valid, expiresAt, err := a.Issue("user-1", auth.RoleViewer, time.Hour)
	if err != nil {
		t.Fatalf("Issue() error = %v", err)
	}
	if d := time.Until(expiresAt); d < 59*time.Minute || d > time.Hour {
		t.Errorf("expiresAt in %s, want about an hour", d)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Now().Add(time.Hour)
	otherIssuer, _, err := newAuthIssuer(t, "someone-else").Issue("user-1", auth.RoleAdmin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		header     string
		wantStatus int
		wantMsg    string
	}{
		{"valid token", "Bearer " + valid, http.StatusOK, ""},
		{"scheme is case-insensitive", "bearer " + valid, http.StatusOK, ""},
		{"missing header", "", http.StatusUnauthorized, "missing bearer token"},
		{"wrong scheme", "Basic dXNlcjpwYXNz", http.StatusUnauthorized, `authorization header must be "Bearer <token>"`},
		{"empty token", "Bearer ", http.StatusUnauthorized, `authorization header must be "Bearer <token>"`},
		{"malformed", "Bearer not.a.jwt", http.StatusUnauthorized, "invalid token"},
		{"expired", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("user-1", "north-cloud", time.Now().Add(-time.Hour)), []byte(secret)), http.StatusUnauthorized, "token expired"},
		{"no exp", "Bearer " + sign(t, jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "user-1", Issuer: "north-cloud"}, []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"wrong secret", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("user-1", "north-cloud", hour), []byte(strings.Repeat("x", 32))), http.StatusUnauthorized, "invalid token"},
		{"wrong issuer", "Bearer " + otherIssuer, http.StatusUnauthorized, "invalid token"},
		{"no subject", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("", "north-cloud", hour), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"alg none", "Bearer " + sign(t, jwt.SigningMethodNone, claims("user-1", "north-cloud", hour), jwt.UnsafeAllowNoneSignatureType), http.StatusUnauthorized, "invalid token"},
		{"other HMAC alg with our secret", "Bearer " + sign(t, jwt.SigningMethodHS512, claims("user-1", "north-cloud", hour), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"RS256 token", "Bearer " + sign(t, jwt.SigningMethodRS256, claims("user-1", "north-cloud", hour), rsaKey), http.StatusUnauthorized, "invalid token"},
		{"hand-signed valid", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("user-1", "north-cloud", hour), []byte(secret)), http.StatusOK, ""},
		{"wrong audience", "Bearer " + sign(t, jwt.SigningMethodHS256, with(claims("user-1", "north-cloud", hour), func(c *jwt.RegisteredClaims) {
			c.Audience = jwt.ClaimStrings{"some-other-api"}
		}), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"no audience", "Bearer " + sign(t, jwt.SigningMethodHS256, with(claims("user-1", "north-cloud", hour), func(c *jwt.RegisteredClaims) {
			c.Audience = nil
		}), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"100-year lifetime", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("user-1", "north-cloud", time.Now().AddDate(100, 0, 0)), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"lifetime just over the maximum", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("user-1", "north-cloud", time.Now().Add(auth.MaxLifetimeDefault+time.Minute)), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"no iat", "Bearer " + sign(t, jwt.SigningMethodHS256, with(claims("user-1", "north-cloud", hour), func(c *jwt.RegisteredClaims) {
			c.IssuedAt = nil
		}), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"newline and ANSI escape in sub", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("mallory\n\x1b[31m", "north-cloud", hour), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"NUL in sub", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("a\x00b", "north-cloud", hour), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"no role", "Bearer " + sign(t, jwt.SigningMethodHS256, withRole(claims("user-1", "north-cloud", hour), ""), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"unknown role", "Bearer " + sign(t, jwt.SigningMethodHS256, withRole(claims("user-1", "north-cloud", hour), "root"), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"role in another case", "Bearer " + sign(t, jwt.SigningMethodHS256, withRole(claims("user-1", "north-cloud", hour), "Admin"), []byte(secret)), http.StatusUnauthorized, "invalid token"},
		{"bidi override in sub", "Bearer " + sign(t, jwt.SigningMethodHS256, claims("admin\u202e", "north-cloud", hour), []byte(secret)), http.StatusUnauthorized, "invalid token"},
	}

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/api/v1/me", a.Middleware(auth.Policy{}), func(c *gin.Context) { c.String(http.StatusOK, auth.Subject(c)) })

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/api/v1/me", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus == http.StatusOK {
				if rec.Body.String() != "user-1" {
					t.Errorf("Subject = %q, want user-1", rec.Body)
				}
				return
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != "Bearer" {
				t.Errorf("WWW-Authenticate = %q", got)
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body is not JSON: %s", rec.Body)
			}
			if body.Error.Code != "unauthorized" || body.Error.Message != tt.wantMsg {
				t.Errorf("error = %+v, want unauthorized / %q", body.Error, tt.wantMsg)
			}
		})
	}
}

func newAuthIssuer(t *testing.T, issuer string) *auth.Authenticator {
	t.Helper()
	a, err := auth.New(auth.Config{Secret: secret, Issuer: issuer})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestIssueAndVerify(t *testing.T) {
	t.Parallel()
	a := newAuth(t, secret)
	token, _, err := a.Issue("svc-publisher", auth.RoleOperator, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Verify(token)
	if err != nil {
		t.Fatalf("Verify() error = %v", err)
	}
	if c.Subject != "svc-publisher" || c.Role != auth.RoleOperator || c.Issuer != auth.IssuerDefault || c.ExpiresAt == nil || c.ID == "" ||
		len(c.Audience) != 1 || c.Audience[0] != auth.AudienceDefault {
		t.Errorf("claims = %+v", c)
	}
	// A token issued by one service verifies in another with the same secret.
	if _, err := newAuth(t, secret).Verify(token); err != nil {
		t.Errorf("Verify with a second Authenticator = %v", err)
	}

	tests := []struct {
		name    string
		subject string
		ttl     time.Duration
		want    string
	}{
		{"empty subject", "", time.Minute, "subject is missing"},
		{"zero ttl", "s", 0, "ttl must be positive"},
		{"ttl over the maximum", "s", auth.MaxLifetimeDefault + time.Second, "at most 24h0m0s"},
		{"control character in subject", "a\nb", time.Minute, "control character"},
	}
	if _, _, err := a.Issue("s", "root", time.Minute); err == nil || !strings.Contains(err.Error(), `unknown role "root"`) {
		t.Errorf("Issue() with an unknown role: error = %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, _, err := a.Issue(tt.subject, auth.RoleViewer, tt.ttl); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Issue() error = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func TestNewRefusesWeakSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret string
		want   string
	}{
		{"empty", "", "Secret is required"},
		{"short", strings.Repeat("s", 31), "at least 32 bytes (got 31)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := auth.New(auth.Config{Secret: tt.secret})
			if err == nil || a != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() = %v, %v; want error containing %q", a, err, tt.want)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"valid", map[string]string{"JWT_SECRET": secret}, ""},
		{"missing", nil, "invalid configuration: JWT_SECRET: required"},
		{"short", map[string]string{"JWT_SECRET": "short"}, "invalid configuration: JWT_SECRET: must be at least 32 bytes (got 5)"},
		{"example placeholder", map[string]string{"JWT_SECRET": "change-me-local-dev-jwt-secret-0123456789abcdef"},
			"invalid configuration: JWT_SECRET: is the example placeholder of .env.example; generate a secret (openssl rand -hex 32)"},
		{"bad max lifetime", map[string]string{"JWT_SECRET": secret, "JWT_MAX_LIFETIME": "forever"},
			`invalid configuration: JWT_MAX_LIFETIME: must be a positive duration such as "30s" (got "forever")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := config.NewFromMap(tt.env)
			cfg := auth.ConfigFromEnv(l)
			if cfg.Issuer != auth.IssuerDefault || cfg.Audience != auth.AudienceDefault || cfg.MaxLifetime != auth.MaxLifetimeDefault ||
				cfg.Secret != tt.env["JWT_SECRET"] {
				t.Errorf("ConfigFromEnv = %+v", cfg)
			}
			if strings.Contains(cfg.String(), secret) {
				t.Errorf("Config.String() leaks the secret: %s", cfg)
			}
			err := l.Err()
			if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Errorf("Err() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestRotationWithoutDowntime walks the rotation of docs/roles.md through
// three processes' configurations: a token stays valid at every step where
// its secret is still accepted, and is refused once its secret is dropped.
func TestRotationWithoutDowntime(t *testing.T) {
	t.Parallel()
	const old, next = secret, "fedcba9876543210fedcba9876543210"
	mk := func(t *testing.T, c auth.Config) *auth.Authenticator {
		t.Helper()
		a, err := auth.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	issue := func(t *testing.T, a *auth.Authenticator) string {
		t.Helper()
		tok, _, err := a.Issue("ops@example.org", auth.RoleOperator, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	before := mk(t, auth.Config{Secret: old})
	step1 := mk(t, auth.Config{Secret: old, Accepted: []string{next}}) // every process learns the next secret
	step2 := mk(t, auth.Config{Secret: next, Accepted: []string{old}}) // then signs with it
	after := mk(t, auth.Config{Secret: next})                          // the old one dropped once its tokens expired

	oldToken, newToken := issue(t, before), issue(t, step2)
	for _, tc := range []struct {
		name   string
		a      *auth.Authenticator
		token  string
		accept bool
	}{
		{"old token, step 1", step1, oldToken, true},
		{"old token, step 2", step2, oldToken, true},
		{"new token, step 1 (a process not yet at step 2)", step1, newToken, true},
		{"new token, step 2", step2, newToken, true},
		{"new token, before the rotation", before, newToken, false},
		{"old token, after the rotation", after, oldToken, false},
		{"new token, after the rotation", after, newToken, true},
	} {
		_, err := tc.a.Verify(tc.token)
		if (err == nil) != tc.accept {
			t.Errorf("%s: Verify error = %v, want accepted %t", tc.name, err, tc.accept)
		}
	}
	// An accepted secret never signs.
	if _, err := before.Verify(issue(t, step1)); err != nil {
		t.Errorf("step 1 signed with the accepted secret, not JWT_SECRET: %v", err)
	}
}

func TestConfigFromEnvAcceptedSecrets(t *testing.T) {
	t.Parallel()
	const next = "fedcba9876543210fedcba9876543210"
	l := config.NewFromMap(map[string]string{"JWT_SECRET": secret, "JWT_SECRETS_ACCEPTED": " " + next + " , ,"})
	cfg := auth.ConfigFromEnv(l)
	if err := l.Err(); err != nil || len(cfg.Accepted) != 1 || cfg.Accepted[0] != next {
		t.Fatalf("ConfigFromEnv = %+v, %v; want one accepted secret", cfg.Accepted, err)
	}
	if strings.Contains(cfg.String(), next) {
		t.Errorf("Config.String() leaks an accepted secret: %s", cfg)
	}
	for _, bad := range []string{"short", "change-me-0123456789abcdef0123456789abcdef"} {
		l := config.NewFromMap(map[string]string{"JWT_SECRET": secret, "JWT_SECRETS_ACCEPTED": next + "," + bad})
		auth.ConfigFromEnv(l)
		if err := l.Err(); err == nil || !strings.Contains(err.Error(), "JWT_SECRETS_ACCEPTED") {
			t.Errorf("JWT_SECRETS_ACCEPTED with %q: Err() = %v, want a JWT_SECRETS_ACCEPTED problem", bad, err)
		}
	}
	if _, err := auth.New(auth.Config{Secret: secret, Accepted: []string{"short"}}); err == nil {
		t.Error("New accepted a short accepted secret")
	}
}
