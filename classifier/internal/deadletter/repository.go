package deadletter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/clock"
)

// ErrNotFound is returned for an unknown entry id.
var ErrNotFound = errors.New("dead-letter entry not found")

// Repository reads and writes dead_letter_queue.
type Repository struct {
	db *sql.DB
	// now stamps a first failure's next_retry_at; nil is the system clock.
	now clock.Clock
}

// NewRepository returns a repository over the classifier's database.
func NewRepository(db *sql.DB) *Repository {
	return &Repository{db: db}
}

const entryColumns = `id, content_id, source_name, index_name, error_message, COALESCE(error_code, 'UNKNOWN'),
	retry_count, max_retries, next_retry_at, created_at, last_attempt_at`

// Recorded tells what Record did to one failure.
type Recorded struct {
	// Index and ContentID name the document (its raw index and _id).
	Index     string
	ContentID string
	// Inserted is true for a document's first failure.
	Inserted bool
	// Exhausted is true when this failure used the entry's last retry.
	Exhausted bool
}

// Record enqueues failures in one statement. A document's first failure is
// inserted with the first delay of its code's policy (with jitter); a
// document already in the queue has its retry count raised and its delay
// doubled per retry, capped at an hour. Entries that are already exhausted
// are left alone. Validation errors are inserted with no retries.
func (r *Repository) Record(ctx context.Context, failures []Failure) ([]Recorded, error) {
	if len(failures) == 0 {
		return nil, nil
	}
	// One row per document: Postgres rejects an upsert that touches a row twice.
	seen := make(map[domain.DocKey]bool, len(failures))
	var q strings.Builder
	q.WriteString(`INSERT INTO dead_letter_queue
		(content_id, source_name, index_name, error_message, error_code, max_retries, next_retry_at) VALUES `)
	args := make([]any, 0, len(failures)*7)
	now := r.now.Now()
	for _, f := range failures {
		key := domain.DocKey{Index: f.Index, ID: f.ContentID}
		if seen[key] {
			continue
		}
		seen[key] = true
		if len(args) > 0 {
			q.WriteString(",")
		}
		n := len(args)
		fmt.Fprintf(&q, "($%d,$%d,$%d,$%d,$%d,$%d,$%d)", n+1, n+2, n+3, n+4, n+5, n+6, n+7)
		// Every value is made storable: a failure must reach the queue
		// even when what failed is the document's own id or source.
		args = append(args, admission.Storable(f.ContentID, 512), admission.Storable(f.Source, 255), admission.Storable(f.Index, 255),
			admission.Storable(f.Message, 4000), string(f.Code), MaxRetries(f.Code),
			now.Add(RetryPolicy(f.Code).Delay(0)))
	}
	q.WriteString(`
		ON CONFLICT (index_name, content_id) DO UPDATE SET
			retry_count = dead_letter_queue.retry_count + 1,
			error_message = EXCLUDED.error_message,
			error_code = EXCLUDED.error_code,
			source_name = EXCLUDED.source_name,
			last_attempt_at = NOW(),
			next_retry_at = LEAST(
				NOW() + (EXCLUDED.next_retry_at - NOW()) * POWER(2, dead_letter_queue.retry_count + 1),
				NOW() + make_interval(secs => ` + fmt.Sprint(maxRetryDelay.Seconds()) + `))
		WHERE dead_letter_queue.retry_count < dead_letter_queue.max_retries
		RETURNING index_name, content_id, (xmax = 0) AS inserted, retry_count >= max_retries AND max_retries > 0 AS exhausted`)
	rows, err := r.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("record dead letters: %w", err)
	}
	defer rows.Close()
	var out []Recorded
	for rows.Next() {
		var rec Recorded
		if err := rows.Scan(&rec.Index, &rec.ContentID, &rec.Inserted, &rec.Exhausted); err != nil {
			return nil, fmt.Errorf("record dead letters: %w", err)
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

// ClaimDue returns up to limit entries whose retry is due, and moves their
// next_retry_at lease ahead in the same statement, so that no other worker
// or replica claims them while this one works. If the worker dies, the entry
// is due again when the lease passes.
func (r *Repository) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]Entry, error) {
	rows, err := r.db.QueryContext(ctx, `
		UPDATE dead_letter_queue SET next_retry_at = NOW() + make_interval(secs => $2), last_attempt_at = NOW()
		WHERE id IN (
			SELECT id FROM dead_letter_queue
			WHERE next_retry_at <= NOW() AND retry_count < max_retries
			ORDER BY next_retry_at
			LIMIT $1
			FOR UPDATE SKIP LOCKED)
		RETURNING `+entryColumns, limit, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("claim due dead letters: %w", err)
	}
	defer rows.Close()
	return scanEntries(rows)
}

// Resolve deletes the entries of documents that have now been classified
// and returns how many there were.
func (r *Repository) Resolve(ctx context.Context, docs []domain.DocKey) (int64, error) {
	if len(docs) == 0 {
		return 0, nil
	}
	indices, ids := make([]string, len(docs)), make([]string, len(docs))
	for i, d := range docs {
		indices[i], ids[i] = d.Index, d.ID
	}
	res, err := r.db.ExecContext(ctx, `DELETE FROM dead_letter_queue
		WHERE (index_name, content_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, pq.Array(indices), pq.Array(ids))
	if err != nil {
		return 0, fmt.Errorf("resolve dead letters: %w", err)
	}
	return res.RowsAffected()
}

// Filter selects entries for the operator's list and bulk requeue.
type Filter struct {
	Source    string
	ErrorCode string
	// ContentID and Index, when set, select the entries of one document
	// (exact content id) or one raw index (exact name).
	ContentID string
	Index     string
	// Exhausted, when set, selects exhausted (true) or retryable (false) entries.
	Exhausted *bool
}

func (f Filter) where(args *[]any) string {
	var conds []string
	add := func(cond string, v any) {
		*args = append(*args, v)
		conds = append(conds, fmt.Sprintf(cond, len(*args)))
	}
	if f.Source != "" {
		add("source_name = $%d", f.Source)
	}
	if f.ErrorCode != "" {
		add("error_code = $%d", f.ErrorCode)
	}
	if f.ContentID != "" {
		add("content_id = $%d", f.ContentID)
	}
	if f.Index != "" {
		add("index_name = $%d", f.Index)
	}
	if f.Exhausted != nil {
		if *f.Exhausted {
			conds = append(conds, "retry_count >= max_retries")
		} else {
			conds = append(conds, "retry_count < max_retries")
		}
	}
	if len(conds) == 0 {
		return "TRUE"
	}
	return strings.Join(conds, " AND ")
}

// Cursor is the position after the last entry of a page (newest first).
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// List returns up to limit entries matching f, newest first, after cursor.
func (r *Repository) List(ctx context.Context, f Filter, after *Cursor, limit int) ([]Entry, error) {
	var args []any
	where := f.where(&args)
	if after != nil {
		args = append(args, after.CreatedAt, after.ID)
		where += fmt.Sprintf(" AND (created_at, id) < ($%d, $%d::uuid)", len(args)-1, len(args))
	}
	args = append(args, limit)
	rows, err := r.db.QueryContext(ctx, `SELECT `+entryColumns+` FROM dead_letter_queue WHERE `+where+
		fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	defer rows.Close()
	return scanEntries(rows)
}

// Requeue makes one entry due now with its retries reset. An entry that was
// never retryable (a validation error) gets one attempt.
func (r *Repository) Requeue(ctx context.Context, id string) error {
	res, err := r.db.ExecContext(ctx, `UPDATE dead_letter_queue SET `+requeueSet+` WHERE id = $1::uuid`, id)
	if err != nil {
		return fmt.Errorf("requeue dead letter %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

const requeueSet = `retry_count = 0, max_retries = GREATEST(max_retries, 1), next_retry_at = NOW()`

// RequeueMatching requeues every entry matching f and returns how many.
func (r *Repository) RequeueMatching(ctx context.Context, f Filter) (int64, error) {
	var args []any
	res, err := r.db.ExecContext(ctx, `UPDATE dead_letter_queue SET `+requeueSet+` WHERE `+f.where(&args), args...)
	if err != nil {
		return 0, fmt.Errorf("requeue dead letters: %w", err)
	}
	return res.RowsAffected()
}

// Delete removes one entry; the document stays failed in Elasticsearch.
func (r *Repository) Delete(ctx context.Context, id string) error {
	res, err := r.db.ExecContext(ctx, `DELETE FROM dead_letter_queue WHERE id = $1::uuid`, id)
	if err != nil {
		return fmt.Errorf("delete dead letter %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Stats is the queue at a glance.
type Stats struct {
	Pending     int64            `json:"pending"`
	Exhausted   int64            `json:"exhausted"`
	Ready       int64            `json:"ready"`
	AvgRetries  float64          `json:"avg_retries"`
	OldestEntry *time.Time       `json:"oldest_entry"`
	BySource    map[string]int64 `json:"by_source"`
	ByErrorCode map[string]int64 `json:"by_error_code"`
}

// Stats returns the queue's counts. The oldest entry is MIN(created_at):
// the system this one replaces reported MAX, the newest.
func (r *Repository) Stats(ctx context.Context) (*Stats, error) {
	s := &Stats{BySource: map[string]int64{}, ByErrorCode: map[string]int64{}}
	var oldest sql.NullTime
	err := r.db.QueryRowContext(ctx, `
		SELECT COUNT(*) FILTER (WHERE retry_count < max_retries),
		       COUNT(*) FILTER (WHERE retry_count >= max_retries),
		       COUNT(*) FILTER (WHERE next_retry_at <= NOW() AND retry_count < max_retries),
		       COALESCE(AVG(retry_count), 0),
		       MIN(created_at)
		FROM dead_letter_queue`).Scan(&s.Pending, &s.Exhausted, &s.Ready, &s.AvgRetries, &oldest)
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

// PendingBySource counts retryable entries per source, for the
// classifier_dlq_depth gauge.
func (r *Repository) PendingBySource(ctx context.Context) (map[string]int64, error) {
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

func scanEntries(rows *sql.Rows) ([]Entry, error) {
	var out []Entry
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.ID, &e.ContentID, &e.SourceName, &e.IndexName, &e.ErrorMessage, &e.ErrorCode,
			&e.RetryCount, &e.MaxRetries, &e.NextRetryAt, &e.CreatedAt, &e.LastAttemptAt); err != nil {
			return nil, fmt.Errorf("scan dead letter: %w", err)
		}
		e.Exhausted = e.RetryCount >= e.MaxRetries
		out = append(out, e)
	}
	return out, rows.Err()
}
