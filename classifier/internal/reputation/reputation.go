// Package reputation keeps per-source running statistics in Postgres and a
// cached reputation score per source for the pipeline to read.
package reputation

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// ErrNotFound is returned for a source with no statistics.
var ErrNotFound = errors.New("source not found")

// DefaultScore is the reputation of a source never seen before.
const DefaultScore = 0.5

// Delta is what one batch adds to a source's statistics.
type Delta struct {
	Total, Classified, Failed, Crime, QualitySum int64
}

// Source is one source's statistics.
type Source struct {
	Name                string    `json:"source_name"`
	TotalDocuments      int64     `json:"total_documents"`
	ClassifiedDocuments int64     `json:"classified_documents"`
	FailedDocuments     int64     `json:"failed_documents"`
	CrimeDocuments      int64     `json:"crime_documents"`
	AverageQuality      float64   `json:"average_quality"`
	ReputationScore     float64   `json:"reputation_score"`
	FirstSeenAt         time.Time `json:"first_seen_at"`
	LastSeenAt          time.Time `json:"last_seen_at"`
}

// Repository reads and writes source_reputation.
type Repository struct {
	db *sql.DB
}

// NewRepository returns a repository over the classifier's database.
func NewRepository(db *sql.DB) *Repository { return &Repository{db: db} }

// Add applies deltas in one statement. Each source's counters are raised by
// its delta inside the database (col = col + delta), so concurrent workers
// and replicas never overwrite each other: no read-modify-write.
func (r *Repository) Add(ctx context.Context, deltas map[string]Delta) error {
	if len(deltas) == 0 {
		return nil
	}
	names := make([]string, 0, len(deltas))
	for n := range deltas {
		names = append(names, n)
	}
	sort.Strings(names) // a fixed lock order: concurrent batches cannot deadlock
	var q strings.Builder
	q.WriteString(`INSERT INTO source_reputation
		(source_name, total_documents, classified_documents, failed_documents, crime_documents, quality_sum) VALUES `)
	args := make([]any, 0, len(names)*6)
	for i, n := range names {
		d := deltas[n]
		if i > 0 {
			q.WriteString(",")
		}
		k := len(args)
		fmt.Fprintf(&q, "($%d,$%d,$%d,$%d,$%d,$%d)", k+1, k+2, k+3, k+4, k+5, k+6)
		args = append(args, n, d.Total, d.Classified, d.Failed, d.Crime, d.QualitySum)
	}
	q.WriteString(` ON CONFLICT (source_name) DO UPDATE SET
		total_documents      = source_reputation.total_documents + EXCLUDED.total_documents,
		classified_documents = source_reputation.classified_documents + EXCLUDED.classified_documents,
		failed_documents     = source_reputation.failed_documents + EXCLUDED.failed_documents,
		crime_documents      = source_reputation.crime_documents + EXCLUDED.crime_documents,
		quality_sum          = source_reputation.quality_sum + EXCLUDED.quality_sum,
		last_seen_at         = NOW()`)
	if _, err := r.db.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("update source reputation: %w", err)
	}
	return nil
}

const sourceColumns = `source_name, total_documents, classified_documents, failed_documents, crime_documents,
	CASE WHEN classified_documents > 0 THEN quality_sum::float8 / classified_documents ELSE 0 END,
	reputation_score, first_seen_at, last_seen_at`

// List returns every source, best reputation first.
func (r *Repository) List(ctx context.Context) ([]Source, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+sourceColumns+` FROM source_reputation ORDER BY reputation_score DESC, source_name`)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	var out []Source
	for rows.Next() {
		var s Source
		if err := rows.Scan(&s.Name, &s.TotalDocuments, &s.ClassifiedDocuments, &s.FailedDocuments, &s.CrimeDocuments,
			&s.AverageQuality, &s.ReputationScore, &s.FirstSeenAt, &s.LastSeenAt); err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Get returns one source.
func (r *Repository) Get(ctx context.Context, name string) (*Source, error) {
	var s Source
	err := r.db.QueryRowContext(ctx, `SELECT `+sourceColumns+` FROM source_reputation WHERE source_name = $1`, name).
		Scan(&s.Name, &s.TotalDocuments, &s.ClassifiedDocuments, &s.FailedDocuments, &s.CrimeDocuments,
			&s.AverageQuality, &s.ReputationScore, &s.FirstSeenAt, &s.LastSeenAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get source %s: %w", name, err)
	}
	return &s, nil
}

// Cache serves reputation scores from memory and refreshes them from the
// database on an interval, so classifying a document never waits on
// Postgres. It is a lifecycle component.
type Cache struct {
	repo     *Repository
	interval time.Duration
	logger   *slog.Logger
	scores   atomic.Pointer[map[string]float64]
	loop     lifecycle.Loop
}

// NewCache returns a cache refreshed every interval (30s when zero).
func NewCache(repo *Repository, interval time.Duration, logger *slog.Logger) *Cache {
	interval = config.PositiveOr(interval, 30*time.Second)
	c := &Cache{repo: repo, interval: interval, logger: logger.With("component", "reputation_cache")}
	empty := map[string]float64{}
	c.scores.Store(&empty)
	c.loop = lifecycle.Loop{Name: "reputation cache", Logger: c.logger, Step: func(ctx context.Context) time.Duration {
		// The first refresh happened in Start.
		wait := lifecycle.Jitter(c.interval)
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
		}
		if err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
			c.logger.WarnContext(ctx, "reputation refresh failed", "error", err)
		}
		return 0
	}}
	return c
}

// Score returns the cached reputation of source, or DefaultScore.
func (c *Cache) Score(source string) float64 {
	if s, ok := (*c.scores.Load())[source]; ok {
		return s
	}
	return DefaultScore
}

// Refresh reloads every score now.
func (c *Cache) Refresh(ctx context.Context) error {
	sources, err := c.repo.List(ctx)
	if err != nil {
		return err
	}
	m := make(map[string]float64, len(sources))
	for _, s := range sources {
		m[s.Name] = s.ReputationScore
	}
	c.scores.Store(&m)
	return nil
}

// Start loads the scores once and refreshes them in the background.
func (c *Cache) Start(ctx context.Context) error {
	if err := c.Refresh(ctx); err != nil {
		c.logger.WarnContext(ctx, "initial reputation load failed; using defaults until the next refresh", "error", err)
	}
	return c.loop.Start(ctx)
}

// Stop ends the refresh loop.
func (c *Cache) Stop(ctx context.Context) error { return c.loop.Stop(ctx) }
