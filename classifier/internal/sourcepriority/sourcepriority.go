// Package sourcepriority keeps an operator's priority marks on sources
// (table source_priorities): a low-priority source (a backfill, a source
// being reprocessed) gets only the share of the classifier's capacity kept
// for the backlog. A source is the prefix of its raw index
// ({source}_raw_content); one without a mark is normal.
//
// The poller reads the marks with Store.List; the operator sets them
// through PUT /api/v1/sources/{source}/priority.
package sourcepriority

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Priority is a source's priority.
type Priority string

// The priorities.
const (
	Normal Priority = "normal"
	Low    Priority = "low"
)

// Parse reads a priority, "low" or "normal".
func Parse(s string) (Priority, error) {
	switch p := Priority(s); p {
	case Low, Normal:
		return p, nil
	default:
		return "", fmt.Errorf("priority must be %q or %q (got %q)", Low, Normal, s)
	}
}

// Mark is one source's priority and who set it when; a source never
// marked is Normal with no UpdatedAt.
type Mark struct {
	Source    string     `json:"source"`
	Priority  Priority   `json:"priority"`
	UpdatedBy string     `json:"updated_by"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// Store reads and writes source_priorities.
type Store struct{ db *sql.DB }

// NewStore returns a store over the classifier's database.
func NewStore(db *sql.DB) *Store { return &Store{db: db} }

// Get returns source's mark.
func (s *Store) Get(ctx context.Context, source string) (Mark, error) {
	m := Mark{Source: source, Priority: Normal}
	var at time.Time
	err := s.db.QueryRowContext(ctx, `SELECT priority, updated_by, updated_at FROM source_priorities WHERE source_name = $1`, source).
		Scan(&m.Priority, &m.UpdatedBy, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return m, nil
	case err != nil:
		return m, fmt.Errorf("get source priority %s: %w", source, err)
	}
	m.UpdatedAt = &at
	return m, nil
}

// Set marks source with p, by whom, and returns the new mark.
func (s *Store) Set(ctx context.Context, source string, p Priority, by string) (Mark, error) {
	if _, err := Parse(string(p)); err != nil {
		return Mark{}, fmt.Errorf("set source priority %s: %w", source, err)
	}
	m := Mark{Source: source}
	var at time.Time
	err := s.db.QueryRowContext(ctx, `
		INSERT INTO source_priorities (source_name, priority, updated_by) VALUES ($1, $2, $3)
		ON CONFLICT (source_name) DO UPDATE SET priority = EXCLUDED.priority, updated_by = EXCLUDED.updated_by, updated_at = NOW()
		RETURNING priority, updated_by, updated_at`, source, string(p), by).Scan(&m.Priority, &m.UpdatedBy, &at)
	if err != nil {
		return Mark{}, fmt.Errorf("set source priority %s: %w", source, err)
	}
	m.UpdatedAt = &at
	return m, nil
}

// List returns the priority of every marked source; a source missing from
// it is Normal. One small table, read whole.
func (s *Store) List(ctx context.Context) (map[string]Priority, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT source_name, priority FROM source_priorities`)
	if err != nil {
		return nil, fmt.Errorf("list source priorities: %w", err)
	}
	defer rows.Close()
	out := map[string]Priority{}
	for rows.Next() {
		var source string
		var p Priority
		if err := rows.Scan(&source, &p); err != nil {
			return nil, fmt.Errorf("list source priorities: %w", err)
		}
		out[source] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list source priorities: %w", err)
	}
	return out, nil
}
