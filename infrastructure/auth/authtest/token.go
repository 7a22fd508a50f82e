package authtest

import (
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/testenv"
)

// New returns an authenticator signing with secret, failing the test on a
// bad secret.
func New(t testing.TB, secret string) *auth.Authenticator {
	t.Helper()
	a, err := auth.New(auth.Config{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Token returns a token of a for subject with role, valid for an hour.
func Token(t testing.TB, a *auth.Authenticator, subject string, role auth.Role) string {
	t.Helper()
	token, _, err := a.Issue(subject, role, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// EnvToken is Token signed with the JWT_SECRET that `scripts/services.sh
// env` exports, the secret the service binaries a test starts read.
func EnvToken(t testing.TB, subject string, role auth.Role) string {
	t.Helper()
	return Token(t, New(t, testenv.Env(t, "JWT_SECRET", "jwt secret")), subject, role)
}
