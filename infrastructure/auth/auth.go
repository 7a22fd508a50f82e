// Package auth issues and verifies the HS256 bearer tokens that guard every
// /api/v1 route. It fails closed: without a strong secret there is no
// Authenticator, and every token that is not exactly what we issue is refused.
package auth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
)

// IssuerDefault is the iss claim shared by all north-cloud services.
const IssuerDefault = "north-cloud"

// MinSecretBytes is the shortest accepted secret: HS256 is only as strong as
// its key, and 32 bytes matches the hash size.
const MinSecretBytes = 32

// clockSkew tolerates clocks that differ between the service that issues a
// token and the one that verifies it, for the exp, nbf and iat checks.
const clockSkew = 30 * time.Second

// subjectKey stores the verified subject on the gin context.
const subjectKey = "github.com/north-cloud/infrastructure/auth.subject"

// Config holds the shared signing secret.
type Config struct {
	// Secret signs and verifies tokens; at least 32 bytes. Required (JWT_SECRET).
	Secret string
	// Issuer is written to and required in the iss claim. Defaults to
	// "north-cloud".
	Issuer string
}

// String masks the secret so the effective config can be logged at start-up.
func (c Config) String() string {
	return fmt.Sprintf("{Secret:%s Issuer:%s}", mask(c.Secret), c.Issuer)
}

func mask(s string) string {
	if s == "" {
		return "<unset>"
	}
	return fmt.Sprintf("<%d bytes>", len(s))
}

// ConfigFromEnv reads JWT_SECRET, recording a problem when it is missing or
// shorter than 32 bytes, so the service refuses to start without it.
func ConfigFromEnv(l *config.Loader) Config {
	secret := l.Required("JWT_SECRET")
	if secret != "" {
		l.Check("JWT_SECRET", len(secret) >= MinSecretBytes, fmt.Sprintf("must be at least %d bytes (got %d)", MinSecretBytes, len(secret)))
	}
	return Config{Secret: secret, Issuer: IssuerDefault}
}

// Claims are the registered JWT claims our tokens carry.
type Claims struct {
	jwt.RegisteredClaims
}

// Authenticator issues and verifies tokens with one secret.
type Authenticator struct {
	secret []byte
	issuer string
	parser *jwt.Parser
}

// New returns an Authenticator, or an error when the secret is empty or
// shorter than 32 bytes: a service must refuse to start rather than run
// with authentication disabled or guessable.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Issuer == "" {
		cfg.Issuer = IssuerDefault
	}
	if cfg.Secret == "" {
		return nil, errors.New("new authenticator: Secret is required")
	}
	if len(cfg.Secret) < MinSecretBytes {
		return nil, fmt.Errorf("new authenticator: Secret must be at least %d bytes (got %d)", MinSecretBytes, len(cfg.Secret))
	}
	return &Authenticator{
		secret: []byte(cfg.Secret),
		issuer: cfg.Issuer,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(clockSkew),
		),
	}, nil
}

// Issue signs a token for subject that expires after ttl.
func (a *Authenticator) Issue(subject string, ttl time.Duration) (string, time.Time, error) {
	if subject == "" {
		return "", time.Time{}, errors.New("issue token: subject is required")
	}
	if ttl <= 0 {
		return "", time.Time{}, fmt.Errorf("issue token: ttl must be positive (got %s)", ttl)
	}
	now := time.Now()
	expiresAt := now.Add(ttl)
	claims := Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer:    a.issuer,
		Subject:   subject,
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(expiresAt),
		ID:        uuid.NewString(),
	}}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(a.secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("issue token: %w", err)
	}
	return token, expiresAt, nil
}

// Verify checks the signature (HS256 only, so "none" and other algorithms
// are refused), expiry (required), issuer and subject, and returns the claims.
func (a *Authenticator) Verify(token string) (*Claims, error) {
	claims := &Claims{}
	_, err := a.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		// WithValidMethods already refuses other algorithms; checking the
		// type too keeps the key from ever reaching a non-HMAC verifier.
		if _, ok := t.Method.(*jwt.SigningMethodHMAC); !ok {
			return nil, fmt.Errorf("unexpected signing method %v", t.Header["alg"])
		}
		return a.secret, nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify token: %w", err)
	}
	if claims.Subject == "" {
		return nil, errors.New("verify token: subject is missing")
	}
	return claims, nil
}

// Middleware rejects a request without a valid "Authorization: Bearer"
// token with 401 and the standard JSON error, and otherwise makes the
// token's subject available through Subject.
func (a *Authenticator) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		header := c.GetHeader("Authorization")
		if header == "" {
			unauthorized(c, "missing bearer token")
			return
		}
		scheme, token, ok := strings.Cut(header, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			unauthorized(c, "authorization header must be \"Bearer <token>\"")
			return
		}
		claims, err := a.Verify(strings.TrimSpace(token))
		if err != nil {
			msg := "invalid token"
			if errors.Is(err, jwt.ErrTokenExpired) {
				msg = "token expired"
			}
			unauthorized(c, msg)
			return
		}
		c.Set(subjectKey, claims.Subject)
		c.Next()
	}
}

func unauthorized(c *gin.Context, msg string) {
	c.Header("WWW-Authenticate", "Bearer")
	httpserver.WriteError(c, http.StatusUnauthorized, "unauthorized", msg)
}

// Subject returns the verified subject of the request, or "" when the
// request did not pass through Middleware.
func Subject(c *gin.Context) string {
	return c.GetString(subjectKey)
}
