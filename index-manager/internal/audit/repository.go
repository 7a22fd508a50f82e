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
func (r *Repository) Begin(ctx context.Context, actor, action, index string, params map[string]any, requestID string) (int64, error) {
	if params == nil {
		params = map[string]any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return 0, fmt.Errorf("begin audit entry: %w", err)
	}
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
		WHERE id = $1`, id, outcome, status, errMsg)
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
	q := `SELECT id, actor, action, index_name, parameters, outcome, status_code, COALESCE(error, ''),
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
