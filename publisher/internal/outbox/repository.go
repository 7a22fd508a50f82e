// Package outbox is the publisher's access to classified_outbox: claiming
// batches, recording their outcome and reading its statistics.
package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/publisher/internal/domain"
)

// Repository reads and writes classified_outbox.
type Repository struct {
	db *sql.DB
}

// NewRepository returns a repository over the publisher's database.
func NewRepository(db *sql.DB) *Repository {
	return &Repository{db: db}
}

const entryColumns = `id, content_id, source_name, index_name, content_type, topics,
	quality_score, is_crime_related, crime_subcategory,
	title, COALESCE(body, ''), url, published_date, status, retry_count,
	max_retries, error_message, created_at, updated_at,
	published_at, next_retry_at`

// Claim moves up to limit publishable rows to publishing and returns them,
// crime content first, then oldest first. Publishable means pending, failed
// with retries left and due, or left publishing for longer than stale by a
// worker that died. One statement both selects (FOR UPDATE SKIP LOCKED, so
// concurrent publishers never claim the same row) and moves the rows out of
// reach, so no lock has to outlive it.
func (r *Repository) Claim(ctx context.Context, limit int, stale time.Duration) ([]domain.OutboxEntry, error) {
	query := `
		UPDATE classified_outbox
		SET status = 'publishing', updated_at = NOW()
		WHERE id IN (
			SELECT id FROM classified_outbox
			WHERE status = 'pending'
			   OR (status = 'failed' AND retry_count < max_retries AND (next_retry_at IS NULL OR next_retry_at <= NOW()))
			   OR (status = 'publishing' AND updated_at < NOW() - make_interval(secs => $2))
			ORDER BY is_crime_related DESC, created_at ASC
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		)
		RETURNING ` + entryColumns
	rows, err := r.db.QueryContext(ctx, query, limit, stale.Seconds())
	if err != nil {
		return nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	defer rows.Close()
	entries, err := scanEntries(rows)
	if err != nil {
		return nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	// RETURNING does not keep the subquery's order.
	sort.SliceStable(entries, func(i, j int) bool {
		if entries[i].IsCrimeRelated != entries[j].IsCrimeRelated {
			return entries[i].IsCrimeRelated
		}
		return entries[i].CreatedAt.Before(entries[j].CreatedAt)
	})
	return entries, nil
}

// MarkPublished marks rows published in one statement. Only rows still in
// publishing are changed, and it returns how many were.
func (r *Repository) MarkPublished(ctx context.Context, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := r.db.ExecContext(ctx, `
		UPDATE classified_outbox
		SET status = 'published', published_at = NOW(), updated_at = NOW(), error_message = NULL, next_retry_at = NULL
		WHERE id = ANY($1::uuid[]) AND status = 'publishing'`, pq.Array(ids))
	if err != nil {
		return 0, fmt.Errorf("mark published: %w", err)
	}
	return res.RowsAffected()
}

// MarkFailed records a failed publish: status failed, one more retry used,
// the error, and when to try again.
func (r *Repository) MarkFailed(ctx context.Context, id, errMsg string, nextRetryAt time.Time) error {
	_, err := r.db.ExecContext(ctx, `
		UPDATE classified_outbox
		SET status = 'failed', retry_count = retry_count + 1, error_message = $2,
		    next_retry_at = $3, updated_at = NOW()
		WHERE id = $1`, id, errMsg, nextRetryAt)
	if err != nil {
		return fmt.Errorf("mark failed %s: %w", id, err)
	}
	return nil
}

// Release returns claimed rows that were not published to pending without
// using a retry, for a worker that stops mid-batch or cannot reach Redis.
func (r *Repository) Release(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := r.db.ExecContext(ctx, `
		UPDATE classified_outbox SET status = 'pending', updated_at = NOW()
		WHERE id = ANY($1::uuid[]) AND status = 'publishing'`, pq.Array(ids))
	if err != nil {
		return fmt.Errorf("release claimed rows: %w", err)
	}
	return nil
}

// CountByStatus returns the number of rows in each status.
func (r *Repository) CountByStatus(ctx context.Context) (map[domain.OutboxStatus]int64, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT status, COUNT(*) FROM classified_outbox GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count outbox by status: %w", err)
	}
	defer rows.Close()
	out := map[domain.OutboxStatus]int64{}
	for rows.Next() {
		var s domain.OutboxStatus
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("count outbox by status: %w", err)
		}
		out[s] = n
	}
	return out, rows.Err()
}

func scanEntries(rows *sql.Rows) ([]domain.OutboxEntry, error) {
	var entries []domain.OutboxEntry
	for rows.Next() {
		var e domain.OutboxEntry
		var topics pq.StringArray
		if err := rows.Scan(
			&e.ID, &e.ContentID, &e.SourceName, &e.IndexName, &e.ContentType, &topics,
			&e.QualityScore, &e.IsCrimeRelated, &e.CrimeSubcategory,
			&e.Title, &e.Body, &e.URL, &e.PublishedDate, &e.Status, &e.RetryCount,
			&e.MaxRetries, &e.ErrorMessage, &e.CreatedAt, &e.UpdatedAt,
			&e.PublishedAt, &e.NextRetryAt,
		); err != nil {
			return nil, fmt.Errorf("scan outbox entry: %w", err)
		}
		e.Topics = topics
		entries = append(entries, e)
	}
	return entries, rows.Err()
}
