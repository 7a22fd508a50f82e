// Package rates turns Elasticsearch's cumulative index counters into
// indexing and search rates: a Sampler stores the counters of every content
// index on a schedule, and Repository.Rates compares the current counters
// with the oldest sample inside the rate window.
package rates

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/index-manager/internal/indices"
)

// WindowDefault is the span the rates are averaged over.
const WindowDefault = 5 * time.Minute

// Sample is one stored reading of an index's counters.
type Sample struct {
	indices.Counters
	At time.Time
}

// Repository stores samples in index_stats_samples.
type Repository struct {
	db     *sql.DB
	window time.Duration
}

// NewRepository returns a Repository over db; window is the rate window
// (WindowDefault when zero).
func NewRepository(db *sql.DB, window time.Duration) (*Repository, error) {
	if db == nil {
		return nil, errors.New("new rates repository: db is required")
	}
	if window <= 0 {
		window = WindowDefault
	}
	return &Repository{db: db, window: window}, nil
}

// Insert stores one reading of every index, all taken at the same time, in
// one statement.
func (r *Repository) Insert(ctx context.Context, at time.Time, cs []indices.Counters) error {
	if len(cs) == 0 {
		return nil
	}
	names := make([]string, len(cs))
	uuids := make([]string, len(cs))
	idx := make([]int64, len(cs))
	qry := make([]int64, len(cs))
	for i, c := range cs {
		names[i], uuids[i], idx[i], qry[i] = c.Index, c.UUID, c.IndexTotal, c.QueryTotal
	}
	_, err := r.db.ExecContext(ctx, `
		INSERT INTO index_stats_samples (index_name, index_uuid, sampled_at, index_total, query_total)
		SELECT n, u, $1, i, q FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS t(n, u, i, q)
		ON CONFLICT DO NOTHING`, at, pq.Array(names), pq.Array(uuids), pq.Array(idx), pq.Array(qry))
	if err != nil {
		return fmt.Errorf("insert stats samples: %w", err)
	}
	return nil
}

// Prune deletes samples taken before cutoff and returns how many.
func (r *Repository) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := r.db.ExecContext(ctx, `DELETE FROM index_stats_samples WHERE sampled_at < $1`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune stats samples: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Rates returns the indexing rate (documents per second) and search rate
// (queries per second) of an index over the window ending at now, from the
// oldest stored sample of the same index incarnation (uuid) inside the
// window to the current counters. With no such sample both are zero.
func (r *Repository) Rates(ctx context.Context, current indices.Counters, now time.Time) (indexing, search float64, err error) {
	var (
		at       time.Time
		idx, qry int64
	)
	err = r.db.QueryRowContext(ctx, `
		SELECT sampled_at, index_total, query_total FROM index_stats_samples
		WHERE index_name = $1 AND index_uuid = $2 AND sampled_at >= $3 AND sampled_at < $4
		ORDER BY sampled_at ASC LIMIT 1`,
		current.Index, current.UUID, now.Add(-r.window), now).Scan(&at, &idx, &qry)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read stats samples: %w", err)
	}
	old := Sample{Counters: indices.Counters{Index: current.Index, UUID: current.UUID, IndexTotal: idx, QueryTotal: qry}, At: at}
	indexing, search = Compute(old, Sample{Counters: current, At: now})
	return indexing, search, nil
}

// Compute returns the per-second rates between two readings of the same
// index. A counter that went backwards (counters restart with the node) or
// readings not in time order give zero rather than a negative rate.
func Compute(older, newer Sample) (indexing, search float64) {
	secs := newer.At.Sub(older.At).Seconds()
	if secs <= 0 {
		return 0, 0
	}
	if d := newer.IndexTotal - older.IndexTotal; d > 0 {
		indexing = float64(d) / secs
	}
	if d := newer.QueryTotal - older.QueryTotal; d > 0 {
		search = float64(d) / secs
	}
	return indexing, search
}
