package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/north-cloud/infrastructure/sqlwhere"
)

// Filter selects entries for List. Zero fields do not filter.
type Filter struct {
	Actor   string
	Role    string
	Action  string
	Target  string
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

// Store keeps entries in the audit_log table of a service's database
// (created by the service's NNN_audit_log migration).
type Store struct {
	db *sql.DB
}

// NewStore returns a Store over db.
func NewStore(db *sql.DB) (*Store, error) {
	if db == nil {
		return nil, errors.New("new audit store: db is required")
	}
	return &Store{db: db}, nil
}

// bounded returns e's actor, parameters and summary in their stored form:
// the actor escaped (SafeActor), the parameters as bounded JSON
// (BoundParameters) and the summary cut to MaxSummaryBytes, so no caller
// can make a row large or put control characters into the log.
func bounded(e Entry) (actor string, params []byte, summary string, err error) {
	if e.Parameters == nil {
		e.Parameters = map[string]any{}
	}
	params, err = json.Marshal(e.Parameters)
	if err != nil {
		return "", nil, "", err
	}
	return SafeActor(e.Actor), BoundParameters(params), BoundText(e.Summary, MaxSummaryBytes), nil
}

// Begin records an operation about to run, as pending, and returns its id.
// A caller that must not act unrecorded refuses the operation when Begin
// fails.
func (s *Store) Begin(ctx context.Context, e Entry) (int64, error) {
	actor, params, summary, err := bounded(e)
	if err != nil {
		return 0, fmt.Errorf("begin audit entry: %w", err)
	}
	var id int64
	err = s.db.QueryRowContext(ctx, `
		INSERT INTO audit_log (actor, role, method, route, action, target, parameters, summary, outcome, request_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', NULLIF($9, ''))
		RETURNING id`, actor, e.Role, e.Method, e.Route, e.Action, BoundText(e.Target, MaxActorChars), params, summary, e.RequestID).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("begin audit entry: %w", err)
	}
	return id, nil
}

// Finish records how the operation of entry id ended.
func (s *Store) Finish(ctx context.Context, id int64, outcome string, status int, errMsg string) error {
	res, err := s.db.ExecContext(ctx, `
		UPDATE audit_log
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

// Record writes a finished entry (e.Outcome and e.StatusCode set) in one
// statement.
func (s *Store) Record(ctx context.Context, e Entry) error {
	actor, params, summary, err := bounded(e)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `
		INSERT INTO audit_log (actor, role, method, route, action, target, parameters, summary, outcome, status_code, error, request_id, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULLIF($11, ''), NULLIF($12, ''), NOW())`,
		actor, e.Role, e.Method, e.Route, e.Action, BoundText(e.Target, MaxActorChars), params, summary, e.Outcome, e.StatusCode,
		BoundText(e.Error, MaxErrorBytes), e.RequestID)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	return nil
}

// List returns entries matching f, newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Entry, error) {
	if f.Limit <= 0 {
		f.Limit = ListLimitDefault
	}
	f.Limit = min(f.Limit, ListLimitMax)
	var w sqlwhere.Builder
	for _, eq := range []struct{ col, v string }{
		{"actor", f.Actor}, {"role", f.Role}, {"action", f.Action}, {"target", f.Target}, {"outcome", f.Outcome},
	} {
		if eq.v != "" {
			w.Add(eq.col+" = ?", eq.v)
		}
	}
	if !f.Since.IsZero() {
		w.Add("created_at >= ?", f.Since)
	}
	if !f.Until.IsZero() {
		w.Add("created_at < ?", f.Until)
	}
	if f.BeforeID > 0 {
		w.Add("id < ?", f.BeforeID)
	}
	// Rows written before the byte bounds are cut in the query, so a
	// large one never leaves the database whole.
	q := `SELECT id, actor, role, method, route, action, target,
		CASE WHEN octet_length(parameters::text) > ` + strconv.Itoa(MaxParametersBytes) + `
			THEN jsonb_build_object('` + TruncatedMarker + `', true, 'original_bytes', octet_length(parameters::text),
				'excerpt', left(parameters::text, ` + strconv.Itoa(excerptBytes/4) + `))
			ELSE parameters END,
		left(summary, ` + strconv.Itoa(MaxSummaryBytes) + `),
		outcome, status_code, left(COALESCE(error, ''), ` + strconv.Itoa(MaxErrorBytes) + `),
		COALESCE(request_id, ''), created_at, finished_at FROM audit_log` + w.Where() +
		` ORDER BY id DESC LIMIT ` + w.Arg(f.Limit)
	rows, err := s.db.QueryContext(ctx, q, w.Args()...)
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
		if err := rows.Scan(&e.ID, &e.Actor, &e.Role, &e.Method, &e.Route, &e.Action, &e.Target, &params, &e.Summary,
			&e.Outcome, &status, &e.Error, &e.RequestID, &e.CreatedAt, &fin); err != nil {
			return nil, fmt.Errorf("list audit entries: %w", err)
		}
		if err := json.Unmarshal(params, &e.Parameters); err != nil {
			return nil, fmt.Errorf("list audit entries: parameters of %d: %w", e.ID, err)
		}
		e.Error = BoundText(e.Error, MaxErrorBytes)
		e.Summary = BoundText(e.Summary, MaxSummaryBytes)
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
