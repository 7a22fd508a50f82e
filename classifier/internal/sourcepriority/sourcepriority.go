// Package sourcepriority keeps an operator's priority marks on sources
// (table source_priorities), one of the five levels of
// contentindex.Priorities: critical, high, normal, low, cleanup. A source's
// level is the level of each of its raw documents that names none itself.
// The poller orders the documents of every lane by level; a source marked
// low or cleanup (a backfill, a source being reprocessed, old work to clear)
// gets only the share of the classifier's capacity kept for the backlog. A
// source is the prefix of its raw index ({source}_raw_content); one without a
// mark is normal.
//
// The poller reads the marks through a Cache, per raw index; the operator
// sets them through PUT /api/v1/sources/{source}/priority, for sources that
// exist only, and at most Config.MaxLowMarks sources marked (other than
// normal) at once.
package sourcepriority

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
)

// Priority is a source's priority: one of contentindex.Priorities.
type Priority string

// The priorities, highest first.
const (
	Critical Priority = contentindex.PriorityCritical
	High     Priority = contentindex.PriorityHigh
	Normal   Priority = contentindex.PriorityNormal
	Low      Priority = contentindex.PriorityLow
	Cleanup  Priority = contentindex.PriorityCleanup
)

// Parse reads a priority: critical, high, normal, low or cleanup.
func Parse(s string) (Priority, error) {
	if _, ok := contentindex.PriorityValue(s); ok && s != "" {
		return Priority(s), nil
	}
	return "", fmt.Errorf("priority must be one of %s (got %q)", strings.Join(contentindex.Priorities(), ", "), s)
}

// Mark is one source's priority and who set it when; a source never
// marked is Normal with no UpdatedAt.
type Mark struct {
	Source    string     `json:"source"`
	Priority  Priority   `json:"priority"`
	UpdatedBy string     `json:"updated_by"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// MaxLowMarksDefault bounds the sources marked (other than normal) at once. The poller
// reads a mark per raw index, so the bound is not for its searches: it
// keeps the table, the cache and the poller's view small.
const MaxLowMarksDefault = 1000

// Errors of Set, mapped to HTTP statuses by the API.
var (
	// ErrUnknownSource: the source has no raw index, no classified
	// documents and no mark.
	ErrUnknownSource = errors.New("unknown source")
	// ErrTooManyMarks: MaxLowMarks sources are marked already.
	ErrTooManyMarks = errors.New("too many marked sources")
)

// Config configures a Store.
type Config struct {
	// DB is the classifier's database. Required.
	DB *sql.DB
	// Raw is the raw index store: a source exists when its raw index does.
	// Required.
	Raw *rawindex.Store
	// MaxLowMarks bounds the sources marked other than normal at once
	// (the name is that of the days when low was the only mark). Defaults to
	// MaxLowMarksDefault.
	MaxLowMarks int
}

// Store reads and writes source_priorities. It marks only sources that
// exist (a raw index, or documents classified: a row of
// source_reputation, as GET /sources lists them), or that have a mark
// already (so a mark outlives its index and can be lifted).
type Store struct{ cfg Config }

// New returns a store after checking cfg.
func New(cfg Config) (*Store, error) {
	cfg.MaxLowMarks = config.PositiveOr(cfg.MaxLowMarks, MaxLowMarksDefault)
	var errs []error
	if cfg.DB == nil {
		errs = append(errs, errors.New("DB is required"))
	}
	if cfg.Raw == nil {
		errs = append(errs, errors.New("Raw is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new source priority store: %w", err)
	}
	return &Store{cfg: cfg}, nil
}

// MaxLowMarks is the bound on the sources marked other than normal at once.
func (s *Store) MaxLowMarks() int { return s.cfg.MaxLowMarks }

// Get returns source's mark.
func (s *Store) Get(ctx context.Context, source string) (Mark, error) {
	m := Mark{Source: source, Priority: Normal}
	var at time.Time
	err := s.cfg.DB.QueryRowContext(ctx, `SELECT priority, updated_by, updated_at FROM source_priorities WHERE source_name = $1`, source).
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

// Set marks source with p, by whom, and returns the new mark. It answers
// ErrUnknownSource for a source that does not exist and has no mark, and
// ErrTooManyMarks for a new mark other than normal beyond MaxLowMarks.
func (s *Store) Set(ctx context.Context, source string, p Priority, by string) (Mark, error) {
	if _, err := Parse(string(p)); err != nil {
		return Mark{}, fmt.Errorf("set source priority %s: %w", source, err)
	}
	current, err := s.Get(ctx, source)
	if err != nil {
		return Mark{}, fmt.Errorf("set source priority: %w", err)
	}
	if current.UpdatedAt == nil {
		ok, err := s.exists(ctx, source)
		if err != nil {
			return Mark{}, fmt.Errorf("set source priority %s: %w", source, err)
		}
		if !ok {
			return Mark{}, fmt.Errorf("set source priority %s: %w", source, ErrUnknownSource)
		}
	}
	m, err := s.write(ctx, source, p, by)
	if err != nil {
		return Mark{}, fmt.Errorf("set source priority %s: %w", source, err)
	}
	return m, nil
}

// write upserts the mark, counting the marks under a lock on the table
// so that concurrent new marks cannot pass the bound together.
func (s *Store) write(ctx context.Context, source string, p Priority, by string) (Mark, error) {
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return Mark{}, err
	}
	defer func() { _ = tx.Rollback() }()
	// SHARE ROW EXCLUSIVE conflicts with itself, not with the poller's reads.
	if _, err := tx.ExecContext(ctx, `LOCK TABLE source_priorities IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return Mark{}, err
	}
	if p != Normal {
		var others int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM source_priorities WHERE priority <> 'normal' AND source_name <> $1`, source).
			Scan(&others); err != nil {
			return Mark{}, err
		}
		if others >= s.cfg.MaxLowMarks {
			return Mark{}, fmt.Errorf("%d sources are marked, the most allowed: %w", others, ErrTooManyMarks)
		}
	}
	m := Mark{Source: source}
	var at time.Time
	err = tx.QueryRowContext(ctx, `
		INSERT INTO source_priorities (source_name, priority, updated_by) VALUES ($1, $2, $3)
		ON CONFLICT (source_name) DO UPDATE SET priority = EXCLUDED.priority, updated_by = EXCLUDED.updated_by, updated_at = NOW()
		RETURNING priority, updated_by, updated_at`, source, string(p), by).Scan(&m.Priority, &m.UpdatedBy, &at)
	if err != nil {
		return Mark{}, err
	}
	if err := tx.Commit(); err != nil {
		return Mark{}, err
	}
	m.UpdatedAt = &at
	return m, nil
}

// exists reports whether source has classified documents (a row of
// source_reputation) or a raw index.
func (s *Store) exists(ctx context.Context, source string) (bool, error) {
	var known bool
	if err := s.cfg.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM source_reputation WHERE source_name = $1)`, source).
		Scan(&known); err != nil || known {
		return known, err
	}
	exists, err := s.cfg.Raw.Exists(ctx, contentindex.RawIndex(source))
	if err != nil {
		return false, fmt.Errorf("source %s: %w", source, err)
	}
	return exists, nil
}

// List returns the priority of every marked source; a source missing from
// it is Normal. One small table, read whole.
func (s *Store) List(ctx context.Context) (map[string]Priority, error) {
	rows, err := s.cfg.DB.QueryContext(ctx, `SELECT source_name, priority FROM source_priorities`)
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
