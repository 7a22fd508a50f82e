// Package sessions keeps the index-manager's login sessions: a login
// starts one and gets a refresh token, which buys short access tokens until
// the session expires, is revoked (by its user's logout or by an admin), or
// its refresh token is presented a second time (a copy: the session is
// revoked). Access tokens stay stateless JWTs verified by every service, so
// a revocation takes effect when the last access token issued expires: at
// most the access token lifetime (INDEX_MANAGER_TOKEN_TTL) later.
package sessions

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ErrInvalid is a refresh token that is unknown, expired, revoked or was
// used before: the caller must log in again.
var ErrInvalid = errors.New("session ended or refresh token invalid")

// Session is one login session as listed to admins (never its token).
type Session struct {
	ID          string     `json:"id"`
	User        string     `json:"user"`
	Role        string     `json:"role"`
	ClientIP    string     `json:"client_ip"`
	CreatedAt   time.Time  `json:"created_at"`
	RefreshedAt time.Time  `json:"refreshed_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
}

// Repository is the sessions table of the index-manager's database.
type Repository struct {
	db *sql.DB
}

// NewRepository returns the sessions over db (migrated by the service).
func NewRepository(db *sql.DB) (*Repository, error) {
	if db == nil {
		return nil, errors.New("new sessions repository: db is required")
	}
	return &Repository{db: db}, nil
}

// newToken returns a random refresh token and its hash.
func newToken() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	return token, hashOf(token), nil
}

func hashOf(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Start records a session of user with role, ending at expires, and
// returns it with its refresh token.
func (r *Repository) Start(ctx context.Context, user, role, clientIP string, now, expires time.Time) (Session, string, error) {
	const op = "start session"
	token, hash, err := newToken()
	if err != nil {
		return Session{}, "", fmt.Errorf("%s: %w", op, err)
	}
	s := Session{ID: uuid.NewString(), User: user, Role: role, ClientIP: clientIP, CreatedAt: now, RefreshedAt: now, ExpiresAt: expires}
	_, err = r.db.ExecContext(ctx, `
		INSERT INTO sessions (id, username, role, refresh_hash, client_ip, created_at, refreshed_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6, $7)`, s.ID, user, role, hash, clientIP, now, expires)
	if err != nil {
		return Session{}, "", fmt.Errorf("%s: %w", op, err)
	}
	return s, token, nil
}

// Refresh exchanges a session's refresh token for a new one, in one
// statement, so two refreshes with the same token cannot both succeed. A
// token that is the one the last refresh replaced revokes its session (it
// was copied: whoever holds the other copy is cut off too). It returns the
// session and the new token, or ErrInvalid.
func (r *Repository) Refresh(ctx context.Context, token string, now time.Time) (Session, string, error) {
	const op = "refresh session"
	next, nextHash, err := newToken()
	if err != nil {
		return Session{}, "", fmt.Errorf("%s: %w", op, err)
	}
	hash := hashOf(token)
	var s Session
	err = r.db.QueryRowContext(ctx, `
		UPDATE sessions SET previous_hash = refresh_hash, refresh_hash = $2, refreshed_at = $3
		WHERE refresh_hash = $1 AND revoked_at IS NULL AND expires_at > $3
		RETURNING id, username, role, client_ip, created_at, refreshed_at, expires_at`,
		hash, nextHash, now).Scan(&s.ID, &s.User, &s.Role, &s.ClientIP, &s.CreatedAt, &s.RefreshedAt, &s.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := r.db.ExecContext(ctx, `
			UPDATE sessions SET revoked_at = $2, revoked_reason = 'refresh token used twice'
			WHERE previous_hash = $1 AND revoked_at IS NULL`, hash, now); err != nil {
			return Session{}, "", fmt.Errorf("%s: revoke a copied token's session: %w", op, err)
		}
		return Session{}, "", ErrInvalid
	}
	if err != nil {
		return Session{}, "", fmt.Errorf("%s: %w", op, err)
	}
	return s, next, nil
}

// RevokeToken ends the session of a refresh token (a logout). It reports
// whether a live session was ended.
func (r *Repository) RevokeToken(ctx context.Context, token string, now time.Time) (bool, error) {
	res, err := r.db.ExecContext(ctx, `
		UPDATE sessions SET revoked_at = $2, revoked_reason = 'logout'
		WHERE refresh_hash = $1 AND revoked_at IS NULL`, hashOf(token), now)
	return affected("logout", res, err)
}

// Revoke ends one session by id; by names who (for revoked_reason). It
// reports whether a live session was ended.
func (r *Repository) Revoke(ctx context.Context, id, by string, now time.Time) (bool, error) {
	if uuid.Validate(id) != nil {
		return false, nil
	}
	res, err := r.db.ExecContext(ctx, `
		UPDATE sessions SET revoked_at = $2, revoked_reason = $3
		WHERE id = $1 AND revoked_at IS NULL`, id, now, truncate("revoked by "+by))
	return affected("revoke session", res, err)
}

// RevokeUser ends every live session of user and returns how many.
func (r *Repository) RevokeUser(ctx context.Context, user, by string, now time.Time) (int64, error) {
	res, err := r.db.ExecContext(ctx, `
		UPDATE sessions SET revoked_at = $2, revoked_reason = $3
		WHERE username = $1 AND revoked_at IS NULL`, user, now, truncate("revoked by "+by))
	return rowsOf("revoke sessions of a user", res, err)
}

// Live lists the sessions neither revoked nor expired, newest first, at
// most limit.
func (r *Repository) Live(ctx context.Context, now time.Time, limit int) ([]Session, error) {
	const op = "list sessions"
	rows, err := r.db.QueryContext(ctx, `
		SELECT id, username, role, client_ip, created_at, refreshed_at, expires_at
		FROM sessions WHERE revoked_at IS NULL AND expires_at > $1
		ORDER BY created_at DESC, id LIMIT $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer rows.Close()
	out := []Session{}
	for rows.Next() {
		var s Session
		if err := rows.Scan(&s.ID, &s.User, &s.Role, &s.ClientIP, &s.CreatedAt, &s.RefreshedAt, &s.ExpiresAt); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// Prune deletes sessions that ended (expired or revoked) before cutoff, so
// the table holds only what a login or an audit of the last days needs.
func (r *Repository) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := r.db.ExecContext(ctx, `
		DELETE FROM sessions WHERE expires_at < $1 OR revoked_at < $1`, cutoff)
	return rowsOf("prune sessions", res, err)
}

// rowsOf is the number of rows a statement changed, or its error.
func rowsOf(op string, res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return n, nil
}

// affected reports whether a statement changed a row.
func affected(op string, res sql.Result, err error) (bool, error) {
	n, err := rowsOf(op, res, err)
	return n > 0, err
}

func truncate(s string) string {
	if len(s) > 255 {
		return s[:255]
	}
	return s
}
