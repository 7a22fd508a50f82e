package deadletter

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Stats is the queue at a glance.
type Stats struct {
	Pending     int64            `json:"pending"`
	Exhausted   int64            `json:"exhausted"`
	Permanent   int64            `json:"permanent"`
	Ready       int64            `json:"ready"`
	AvgRetries  float64          `json:"avg_retries"`
	OldestEntry *time.Time       `json:"oldest_entry"`
	BySource    map[string]int64 `json:"by_source"`
	ByErrorCode map[string]int64 `json:"by_error_code"`
}

// GetStats returns the queue's counts. The oldest entry is MIN(created_at):
// the system this one replaces reported MAX, the newest.
func (r *Repository) GetStats(ctx context.Context) (*Stats, error) {
	s := &Stats{BySource: map[string]int64{}, ByErrorCode: map[string]int64{}}
	var oldest sql.NullTime
	err := r.db.QueryRowContext(ctx, `
		SELECT COUNT(*) FILTER (WHERE retry_count < max_retries),
		       COUNT(*) FILTER (WHERE retry_count >= max_retries),
		       COUNT(*) FILTER (WHERE permanent_at IS NOT NULL),
		       COUNT(*) FILTER (WHERE next_retry_at <= NOW() AND retry_count < max_retries),
		       COALESCE(AVG(retry_count), 0),
		       MIN(created_at)
		FROM dead_letter_queue`).Scan(&s.Pending, &s.Exhausted, &s.Permanent, &s.Ready, &s.AvgRetries, &oldest)
	if err != nil {
		return nil, fmt.Errorf("dead letter stats: %w", err)
	}
	if oldest.Valid {
		s.OldestEntry = &oldest.Time
	}
	for _, g := range []struct {
		col string
		out map[string]int64
	}{{"source_name", s.BySource}, {"COALESCE(error_code, 'UNKNOWN')", s.ByErrorCode}} {
		if err := r.groupCount(ctx, g.col, g.out, false); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// CountBySource counts retryable entries per source, for the
// classifier_dlq_depth gauge.
func (r *Repository) CountBySource(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	return out, r.groupCount(ctx, "source_name", out, true)
}

func (r *Repository) groupCount(ctx context.Context, col string, out map[string]int64, pendingOnly bool) error {
	where := "TRUE"
	if pendingOnly {
		where = "retry_count < max_retries"
	}
	rows, err := r.db.QueryContext(ctx, `SELECT `+col+`, COUNT(*) FROM dead_letter_queue WHERE `+where+` GROUP BY 1`)
	if err != nil {
		return fmt.Errorf("dead letter counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return fmt.Errorf("dead letter counts: %w", err)
		}
		out[k] = n
	}
	return rows.Err()
}
