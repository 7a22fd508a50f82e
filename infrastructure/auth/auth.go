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
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
)

// IssuerDefault is the iss claim shared by all north-cloud services.
const IssuerDefault = "north-cloud"

// AudienceDefault is the aud claim of every token: one audience shared by
// the three services, because the dashboard signs in once (at the
// index-manager) and uses the same token for all of them. A token signed
// with the same secret for another purpose (another aud, or none) is
// refused.
const AudienceDefault = "north-cloud-api"

// MaxLifetimeDefault is the longest lifetime (exp - iat) a token may have:
// twice the index-manager's default login lifetime. A longer-lived token,
// even correctly signed, is refused, so a leaked token cannot be valid for
// years.
const MaxLifetimeDefault = 24 * time.Hour

// MaxSubjectBytes bounds the sub claim, which ends up in logs and the audit
// log.
const MaxSubjectBytes = 255

// placeholderMarker is in every example secret of .env.example; a service
// refuses to start with such a secret.
const placeholderMarker = "change-me"

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
	// Accepted are further secrets whose tokens are verified, never used
	// to sign (JWT_SECRETS_ACCEPTED): the next secret while a rotation is
	// rolled out, then the old one until its tokens have expired. Each is
	// held to Secret's rules.
	Accepted []string
	// Issuer is written to and required in the iss claim. Defaults to
	// "north-cloud".
	Issuer string
	// Audience is written to and required in the aud claim. Defaults to
	// AudienceDefault.
	Audience string
	// MaxLifetime is the longest exp - iat accepted (and issued). Defaults
	// to MaxLifetimeDefault (JWT_MAX_LIFETIME).
	MaxLifetime time.Duration
}

// String masks the secret so the effective config can be logged at start-up.
func (c Config) String() string {
	accepted := make([]string, len(c.Accepted))
	for i, s := range c.Accepted {
		accepted[i] = mask(s)
	}
	return fmt.Sprintf("{Secret:%s Accepted:[%s] Issuer:%s Audience:%s MaxLifetime:%s}",
		mask(c.Secret), strings.Join(accepted, " "), c.Issuer, c.Audience, c.MaxLifetime)
}

func mask(s string) string {
	if s == "" {
		return "<unset>"
	}
	return fmt.Sprintf("<%d bytes>", len(s))
}

// ConfigFromEnv reads JWT_SECRET, JWT_SECRETS_ACCEPTED (comma-separated)
// and JWT_MAX_LIFETIME, recording a problem when a secret is missing,
// shorter than 32 bytes or one of the placeholders of .env.example, so the
// service refuses to start with it.
func ConfigFromEnv(l *config.Loader) Config {
	secret := l.Required("JWT_SECRET")
	if secret != "" {
		checkSecret(l, "JWT_SECRET", secret)
	}
	var accepted []string
	for _, s := range strings.Split(l.String("JWT_SECRETS_ACCEPTED", ""), ",") {
		if s = strings.TrimSpace(s); s != "" {
			checkSecret(l, "JWT_SECRETS_ACCEPTED", s)
			accepted = append(accepted, s)
		}
	}
	return Config{Secret: secret, Accepted: accepted, Issuer: IssuerDefault, Audience: AudienceDefault,
		MaxLifetime: l.Duration("JWT_MAX_LIFETIME", MaxLifetimeDefault)}
}

// checkSecret records a problem with one secret of the variable name.
func checkSecret(l *config.Loader, name, secret string) {
	l.Check(name, len(secret) >= MinSecretBytes, fmt.Sprintf("must be at least %d bytes (got %d)", MinSecretBytes, len(secret)))
	l.Check(name, !IsPlaceholder(secret),
		"is the example placeholder of .env.example; generate a secret (openssl rand -hex 32)")
}

// IsPlaceholder reports whether secret is one of the example values of
// .env.example (they all contain "change-me"), which are public.
func IsPlaceholder(secret string) bool {
	return strings.Contains(strings.ToLower(secret), placeholderMarker)
}

// Claims are the registered JWT claims our tokens carry, and the holder's
// role.
type Claims struct {
	jwt.RegisteredClaims
	// Role is what the holder may do; a token without a known role is
	// refused.
	Role Role `json:"role"`
}

// Authenticator issues tokens with one secret and verifies them with it
// and the accepted ones.
type Authenticator struct {
	secret      []byte
	keys        jwt.VerificationKeySet
	issuer      string
	audience    string
	maxLifetime time.Duration
	parser      *jwt.Parser
}

// New returns an Authenticator, or an error when the secret is empty or
// shorter than 32 bytes: a service must refuse to start rather than run
// with authentication disabled or guessable.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Issuer == "" {
		cfg.Issuer = IssuerDefault
	}
	if cfg.Audience == "" {
		cfg.Audience = AudienceDefault
	}
	if cfg.MaxLifetime == 0 {
		cfg.MaxLifetime = MaxLifetimeDefault
	}
	if cfg.MaxLifetime < 0 {
		return nil, fmt.Errorf("new authenticator: MaxLifetime must be positive (got %s)", cfg.MaxLifetime)
	}
	if cfg.Secret == "" {
		return nil, errors.New("new authenticator: Secret is required")
	}
	if len(cfg.Secret) < MinSecretBytes {
		return nil, fmt.Errorf("new authenticator: Secret must be at least %d bytes (got %d)", MinSecretBytes, len(cfg.Secret))
	}
	keys := jwt.VerificationKeySet{Keys: []jwt.VerificationKey{[]byte(cfg.Secret)}}
	for i, s := range cfg.Accepted {
		if len(s) < MinSecretBytes {
			return nil, fmt.Errorf("new authenticator: Accepted[%d] must be at least %d bytes (got %d)", i, MinSecretBytes, len(s))
		}
		keys.Keys = append(keys.Keys, []byte(s))
	}
	return &Authenticator{
		secret:      []byte(cfg.Secret),
		keys:        keys,
		issuer:      cfg.Issuer,
		audience:    cfg.Audience,
		maxLifetime: cfg.MaxLifetime,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithAudience(cfg.Audience),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(clockSkew),
		),
	}, nil
}

// Issue signs a token for subject with role that expires after ttl, at
// most the maximum lifetime.
func (a *Authenticator) Issue(subject string, role Role, ttl time.Duration) (string, time.Time, error) {
	if err := checkSubject(subject); err != nil {
		return "", time.Time{}, fmt.Errorf("issue token: %w", err)
	}
	if !role.Valid() {
		return "", time.Time{}, fmt.Errorf("issue token: unknown role %q", role)
	}
	if ttl <= 0 || ttl > a.maxLifetime {
		return "", time.Time{}, fmt.Errorf("issue token: ttl must be positive and at most %s (got %s)", a.maxLifetime, ttl)
	}
	now := time.Now()
	expiresAt := now.Add(ttl)
	claims := Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer:    a.issuer,
		Subject:   subject,
		Audience:  jwt.ClaimStrings{a.audience},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(expiresAt),
		ID:        uuid.NewString(),
	}, Role: role}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(a.secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("issue token: %w", err)
	}
	return token, expiresAt, nil
}

// Verify checks the signature (HS256 only, so "none" and other algorithms
// are refused), expiry and issue time (required, at most the maximum
// lifetime apart), issuer, audience, subject (printable text only: it
// reaches logs and the audit log) and role (one of Roles), and returns the
// claims.
func (a *Authenticator) Verify(token string) (*Claims, error) {
	claims := &Claims{}
	_, err := a.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		// WithValidMethods already refuses other algorithms; checking the
		// type too keeps the key from ever reaching a non-HMAC verifier.
		if _, ok := t.Method.(*jwt.SigningMethodHMAC); !ok {
			return nil, fmt.Errorf("unexpected signing method %v", t.Header["alg"])
		}
		return a.keys, nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify token: %w", err)
	}
	if claims.IssuedAt == nil {
		return nil, errors.New("verify token: iat is missing")
	}
	if life := claims.ExpiresAt.Sub(claims.IssuedAt.Time); life > a.maxLifetime {
		return nil, fmt.Errorf("verify token: lifetime %s is over the maximum %s", life, a.maxLifetime)
	}
	if err := checkSubject(claims.Subject); err != nil {
		return nil, fmt.Errorf("verify token: %w", err)
	}
	if !claims.Role.Valid() {
		return nil, fmt.Errorf("verify token: unknown role %q", claims.Role)
	}
	return claims, nil
}

// checkSubject accepts a non-empty subject of at most MaxSubjectBytes of
// valid UTF-8 without control or format characters (newlines, ANSI
// escapes, NUL, bidirectional overrides), which could forge log lines or
// drive a terminal.
func checkSubject(sub string) error {
	switch {
	case sub == "":
		return errors.New("subject is missing")
	case len(sub) > MaxSubjectBytes:
		return fmt.Errorf("subject is over %d bytes", MaxSubjectBytes)
	case !utf8.ValidString(sub):
		return errors.New("subject is not valid UTF-8")
	}
	for _, r := range sub {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("subject contains the control character %U", r)
		}
	}
	return nil
}

// Authenticated reports whether r carries a valid bearer token, for
// routes that answer everyone but tell more to operators (/ready details).
func (a *Authenticator) Authenticated(r *http.Request) bool {
	_, err := a.VerifyRequest(r)
	return err == nil
}

// VerifyRequest verifies the bearer token of r's Authorization header, as
// Verify does, for handlers outside gin (the dashboard server).
func (a *Authenticator) VerifyRequest(r *http.Request) (*Claims, error) {
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return nil, errors.New("verify token: authorization header must be \"Bearer <token>\"")
	}
	return a.Verify(token)
}

// bearer returns the token of an "Authorization: Bearer <token>" header
// value (the scheme in any case), and whether there is one.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// Middleware rejects a request without a valid "Authorization: Bearer"
// token with 401 and the standard JSON error, makes the token's subject and
// role available through Subject and RoleOf, and refuses with 403 a request
// whose route needs a higher role than the token's under p.
func (a *Authenticator) Middleware(p Policy) gin.HandlerFunc {
	return func(c *gin.Context) {
		header := c.GetHeader("Authorization")
		if header == "" {
			unauthorized(c, "missing bearer token")
			return
		}
		token, ok := bearer(header)
		if !ok {
			unauthorized(c, "authorization header must be \"Bearer <token>\"")
			return
		}
		claims, err := a.Verify(token)
		if err != nil {
			msg := "invalid token"
			if errors.Is(err, jwt.ErrTokenExpired) {
				msg = "token expired"
			}
			unauthorized(c, msg)
			return
		}
		c.Set(subjectKey, claims.Subject)
		c.Set(roleKey, claims.Role)
		if !authorize(c, p, claims.Role) {
			return
		}
		c.Next()
	}
}

func unauthorized(c *gin.Context, msg string) {
	c.Header("WWW-Authenticate", "Bearer")
	httpserver.WriteError(c, http.StatusUnauthorized, httpserver.CodeUnauthorized, msg)
}

// Subject returns the verified subject of the request, or "" when the
// request did not pass through Middleware.
func Subject(c *gin.Context) string {
	return c.GetString(subjectKey)
}
