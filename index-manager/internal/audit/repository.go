// Package audit records every index-changing operation (create, delete,
// refresh) in the index-manager's own database: who asked, with which
// parameters, how it ended and when.
package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Actions recorded in the log.
const (
	ActionCreate  = "create"
	ActionDelete  = "delete"
	ActionRefresh = "refresh"
)

// Outcomes of an entry. An entry is pending from before the operation
// reaches Elasticsearch until it is finished.
const (
	OutcomePending = "pending"
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
)

// ListLimitDefault and ListLimitMax bound one page of List.
const (
	ListLimitDefault = 50
	ListLimitMax     = 500
)

// Byte bounds of one entry. Begin stores at most MaxParametersBytes of
// parameters (larger ones are replaced by a truncation marker holding an
// excerpt), Finish at most MaxErrorBytes of error text, and actors are
// escaped and cut to MaxActorChars. List applies the same bounds to rows
// written before these limits existed, so a page of List is at most
// ListLimitMax entries of about MaxEntryBytes each.
const (
	MaxParametersBytes = 8 << 10
	MaxErrorBytes      = 2 << 10
	MaxActorChars      = 255
	// MaxEntryBytes is a generous bound on one entry's JSON size.
	MaxEntryBytes = MaxParametersBytes + MaxErrorBytes + 4*MaxActorChars + 1024
	// excerptBytes is the size of the excerpt a truncation marker keeps.
	excerptBytes = 4 << 10
)

// TruncatedMarker is the key a truncated parameters object carries
// (true), alongside "original_bytes" and "excerpt" (the start of the
// original JSON text).
const TruncatedMarker = "_truncated"

// Entry is one audit log row.
type Entry struct {
	ID         int64          `json:"id"`
	Actor      string         `json:"actor"`
	Action     string         `json:"action"`
	IndexName  string         `json:"index_name"`
	Parameters map[string]any `json:"parameters"`
	Outcome    string         `json:"outcome"`
	StatusCode *int           `json:"status_code"`
	Error      string         `json:"error,omitempty"`
	RequestID  string         `json:"request_id,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
	FinishedAt *time.Time     `json:"finished_at"`
}

// Filter selects entries for List. Zero fields do not filter.
type Filter struct {
	Actor   string
	Action  string
	Index   string
	Outcome string
	Since   time.Time
	Until   time.Time
	// BeforeID returns entries older than this id (keyset pagination:
	// pass the last id of the previous page).
	BeforeID int64
	// Limit is the page size; defaults to ListLimitDefault, at most
	// ListLimitMax.
	Limit int
}

// Repository stores entries in index_audit_log.
type Repository struct {
	db *sql.DB
}

// NewRepository returns a Repository over db (migrated by the service).
func NewRepository(db *sql.DB) (*Repository, error) {
	if db == nil {
		return nil, errors.New("new audit repository: db is required")
	}
	return &Repository{db: db}, nil
}

// Begin records an operation about to run, as pending, and returns its id.
// Callers refuse the operation when Begin fails, so nothing changes
// unrecorded.
//
// actor is stored escaped (SafeActor) and params bounded
// (BoundParameters), so no caller can make a row large or put control
// characters into the log.
func (r *Repository) Begin(ctx context.Context, actor, action, index string, params map[string]any, requestID string) (int64, error) {
	if params == nil {
		params = map[string]any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return 0, fmt.Errorf("begin audit entry: %w", err)
	}
	p = BoundParameters(p)
	actor = SafeActor(actor)
	var id int64
	err = r.db.QueryRowContext(ctx, `
		INSERT INTO index_audit_log (actor, action, index_name, parameters, outcome, request_id)
		VALUES ($1, $2, $3, $4, 'pending', NULLIF($5, ''))
		RETURNING id`, actor, action, index, p, requestID).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("begin audit entry: %w", err)
	}
	return id, nil
}

// Finish records how the operation of entry id ended.
func (r *Repository) Finish(ctx context.Context, id int64, outcome string, status int, errMsg string) error {
	res, err := r.db.ExecContext(ctx, `
		UPDATE index_audit_log
		SET outcome = $2, status_code = $3, error = NULLIF($4, ''), finished_at = NOW()
		WHERE id = $1`, id, outcome, status, BoundText(errMsg, MaxErrorBytes))
	if err != nil {
		return fmt.Errorf("finish audit entry %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("finish audit entry %d: no such entry", id)
	}
	return nil
}

// List returns entries matching f, newest first.
func (r *Repository) List(ctx context.Context, f Filter) ([]Entry, error) {
	if f.Limit <= 0 {
		f.Limit = ListLimitDefault
	}
	f.Limit = min(f.Limit, ListLimitMax)
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Actor != "" {
		add("actor = ?", f.Actor)
	}
	if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.Index != "" {
		add("index_name = ?", f.Index)
	}
	if f.Outcome != "" {
		add("outcome = ?", f.Outcome)
	}
	if !f.Since.IsZero() {
		add("created_at >= ?", f.Since)
	}
	if !f.Until.IsZero() {
		add("created_at < ?", f.Until)
	}
	if f.BeforeID > 0 {
		add("id < ?", f.BeforeID)
	}
	// Rows written before the byte bounds are cut in the query, so a
	// large one never leaves the database whole.
	q := `SELECT id, actor, action, index_name,
		CASE WHEN octet_length(parameters::text) > ` + strconv.Itoa(MaxParametersBytes) + `
			THEN jsonb_build_object('` + TruncatedMarker + `', true, 'original_bytes', octet_length(parameters::text),
				'excerpt', left(parameters::text, ` + strconv.Itoa(excerptBytes/4) + `))
			ELSE parameters END,
		outcome, status_code, left(COALESCE(error, ''), ` + strconv.Itoa(MaxErrorBytes) + `),
		COALESCE(request_id, ''), created_at, finished_at FROM index_audit_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, f.Limit)
	q += " ORDER BY id DESC LIMIT $" + strconv.Itoa(len(args))
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var (
			e      Entry
			params []byte
			status sql.NullInt64
			fin    sql.NullTime
		)
		if err := rows.Scan(&e.ID, &e.Actor, &e.Action, &e.IndexName, &params, &e.Outcome, &status, &e.Error,
			&e.RequestID, &e.CreatedAt, &fin); err != nil {
			return nil, fmt.Errorf("list audit entries: %w", err)
		}
		if err := json.Unmarshal(params, &e.Parameters); err != nil {
			return nil, fmt.Errorf("list audit entries: parameters of %d: %w", e.ID, err)
		}
		e.Error = BoundText(e.Error, MaxErrorBytes)
		e.Actor = SafeActor(e.Actor)
		if status.Valid {
			s := int(status.Int64)
			e.StatusCode = &s
		}
		if fin.Valid {
			t := fin.Time.UTC()
			e.FinishedAt = &t
		}
		e.CreatedAt = e.CreatedAt.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	return out, nil
}

// BoundParameters returns p (a JSON object) unchanged when it fits in
// MaxParametersBytes, and otherwise a marker object
// {"_truncated": true, "original_bytes": n, "excerpt": "<start of p>"} that
// does.
func BoundParameters(p []byte) []byte {
	if len(p) <= MaxParametersBytes {
		return p
	}
	for n := excerptBytes; n > 0; n /= 2 {
		out, err := json.Marshal(map[string]any{
			TruncatedMarker: true, "original_bytes": len(p), "excerpt": cutUTF8(string(p), n),
		})
		if err == nil && len(out) <= MaxParametersBytes {
			return out
		}
	}
	out, _ := json.Marshal(map[string]any{TruncatedMarker: true, "original_bytes": len(p)})
	return out
}

// truncatedSuffix marks text cut by BoundText.
const truncatedSuffix = " ...[truncated]"

// BoundText cuts s to at most maxBytes (on a character boundary), ending
// it with a marker when it was cut, and replaces invalid UTF-8 and NUL
// characters, which Postgres text cannot hold.
func BoundText(s string, maxBytes int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= maxBytes {
		return s
	}
	return cutUTF8(s, maxBytes-len(truncatedSuffix)) + truncatedSuffix
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// SafeActor is the form an actor (a token's subject) is stored and listed
// in. A subject of printable characters is kept as it is; one with control
// characters (newlines, ANSI escapes, NUL), invalid UTF-8 or other
// non-printing characters is stored quoted and escaped in Go syntax
// (strconv.QuoteToGraphic: "\"evil\\n\\x1b[31m\""), so it can neither forge
// log lines nor drive a terminal. The result is at most MaxActorChars
// characters (the column's size).
func SafeActor(actor string) string {
	for _, r := range actor {
		if r == utf8.RuneError || !unicode.IsGraphic(r) {
			actor = strconv.QuoteToGraphic(actor)
			break
		}
	}
	if utf8.RuneCountInString(actor) <= MaxActorChars {
		return actor
	}
	const marker = "..."
	runes := []rune(actor)
	return string(runes[:MaxActorChars-len(marker)]) + marker
}

// MaxPageBytes bounds the JSON size of one page of entries served by the
// API; a page that would be larger ends early (FitPage).
const MaxPageBytes = 1 << 20

// FitPage returns the leading entries whose JSON encodings add up to at
// most maxBytes (always at least one entry), and whether any were left
// out.
func FitPage(entries []Entry, maxBytes int) ([]Entry, bool) {
	total := 0
	for i, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return entries[:i], true
		}
		total += len(b) + 1
		if total > maxBytes && i > 0 {
			return entries[:i], true
		}
	}
	return entries, false
}
