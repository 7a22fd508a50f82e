// Package outbox is the publisher's access to classified_outbox: claiming
// batches, recording their outcome, recovering and cleaning up rows, and the
// queries behind the operator API.
package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/sqlwhere"
	"github.com/north-cloud/publisher/internal/domain"
)

// NotifyChannel is the LISTEN/NOTIFY channel on which writers, once their
// inserts commit (outbox.Wake), and re-queues wake the publishers.
const NotifyChannel = outbox.NotifyChannel

// Repository reads and writes classified_outbox.
type Repository struct {
	db    *sql.DB
	claim prepared
}

// NewRepository returns a repository over the publisher's database.
func NewRepository(db *sql.DB) *Repository {
	return &Repository{db: db, claim: prepared{query: claimQuery()}}
}

// Batch is one claim: the rows moved to publishing and the token they
// carry while this claim holds them.
type Batch struct {
	// Token identifies the claim (migration 005). The batch's outcome is
	// recorded only on rows that still carry it, so a batch that outlived
	// the stale age cannot overwrite the claim of whoever took its rows over.
	Token   string
	Entries []domain.OutboxEntry
}

// FetchPending claims up to limit pending rows under one fresh claim token
// (status publishing) and returns them, crime content first, then oldest
// first. One statement both selects (FOR UPDATE SKIP LOCKED, so concurrent
// publishers never claim the same row) and moves the rows out of reach, so
// no lock has to outlive it. Rows left publishing by a worker that died are
// returned to pending by ResetToPending.
func (r *Repository) FetchPending(ctx context.Context, limit int) (Batch, error) {
	_, batch, err := r.markAndClaim(ctx, Published{}, limit, claimPending)
	return batch, err
}

// FetchRetryable claims, as FetchPending does, up to limit failed rows with
// retries left whose next_retry_at has come, the longest due first.
func (r *Repository) FetchRetryable(ctx context.Context, limit int) (Batch, error) {
	_, batch, err := r.markAndClaim(ctx, Published{}, limit, claimRetryable)
	return batch, err
}

// claimKind says which rows a claim may take.
type claimKind string

const (
	claimPending   claimKind = "pending"
	claimRetryable claimKind = "retryable"
	claimAll       claimKind = "all"
)

// Published names the rows of one claim whose messages went out.
type Published struct {
	// Token is the claim token of the batch the rows belong to.
	Token string
	IDs   []string
}

// MarkAndClaim marks the rows of done published, as MarkPublished does,
// and claims the next batch of publishable rows (pending, or failed with
// retries left and due: FetchPending and FetchRetryable together) in one
// statement: a worker that
// claims again as soon as it has published spends one round trip and one
// plan per batch instead of two. It returns how many of done's rows were
// marked (rows no longer publishing under done.Token are left alone, as
// MarkPublished leaves them); when it fails, neither happened.
func (r *Repository) MarkAndClaim(ctx context.Context, done Published, limit int) (int64, Batch, error) {
	return r.markAndClaim(ctx, done, limit, claimAll)
}

func (r *Repository) markAndClaim(ctx context.Context, done Published, limit int, kind claimKind) (int64, Batch, error) {
	token, err := newToken()
	if err != nil {
		return 0, Batch{}, fmt.Errorf("claim outbox rows: %w", err)
	}
	var doneToken any // NULL marks nothing
	if len(done.IDs) > 0 {
		doneToken = done.Token
	}
	stmt, err := r.claim.stmt(ctx, r.db)
	if err != nil {
		return 0, Batch{}, fmt.Errorf("claim outbox rows: %w", err)
	}
	rows, err := stmt.QueryContext(ctx, limit, token, pq.Array(done.IDs), doneToken, string(kind))
	if err != nil {
		return 0, Batch{}, fmt.Errorf("claim outbox rows: %w", err)
	}
	defer rows.Close()
	marked, entries, err := scanClaimed(rows)
	if err != nil {
		return 0, Batch{}, fmt.Errorf("claim outbox rows: %w", err)
	}
	// RETURNING does not keep the subquery's order.
	sort.SliceStable(entries, func(i, j int) bool {
		if entries[i].IsCrimeRelated != entries[j].IsCrimeRelated {
			return entries[i].IsCrimeRelated
		}
		return entries[i].CreatedAt.Before(entries[j].CreatedAt)
	})
	return marked, Batch{Token: token, Entries: entries}, nil
}

// claimQuery is MarkAndClaim's statement. It returns one row per claimed
// row, each carrying the marked count, or, when it claims nothing, a single
// row with the count and NULL in every claimed column (the LEFT JOIN), so
// the count is never lost.
func claimQuery() string {
	return `
		WITH marked AS (
			UPDATE classified_outbox
			SET status = 'published', published_at = NOW(), updated_at = NOW(), error_message = NULL, next_retry_at = NULL,
			    claim_token = NULL
			WHERE id = ANY($3::uuid[]) AND claim_token = $4::uuid AND status = 'publishing'
			RETURNING 1
		), pending AS (
			SELECT id, is_crime_related, created_at FROM classified_outbox
			WHERE status = 'pending' AND $5 <> 'retryable'
			ORDER BY is_crime_related DESC, created_at ASC
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		), due AS (
			SELECT id, is_crime_related, created_at FROM classified_outbox
			WHERE status = 'failed' AND retry_count < max_retries AND $5 <> 'pending'
			  AND (next_retry_at IS NULL OR next_retry_at <= NOW())
			ORDER BY next_retry_at ASC NULLS FIRST
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		), claimed AS (
			UPDATE classified_outbox
			SET status = 'publishing', claim_token = $2, updated_at = NOW()
			WHERE id IN (
				SELECT id FROM (SELECT * FROM pending UNION ALL SELECT * FROM due) candidates
				ORDER BY is_crime_related DESC, created_at ASC
				LIMIT $1
			)
			RETURNING ` + outbox.SelectList() + `
		)
		SELECT (SELECT COUNT(*) FROM marked), claimed.id IS NOT NULL, claimed.*
		FROM (VALUES (1)) AS one (x) LEFT JOIN claimed ON TRUE`
}

// scanClaimed reads MarkAndClaim's rows: the marked count, whether the row
// holds a claimed row, then the claimed row's columns. Only the first row
// can be the one that holds none, so only it is read twice: first without
// its claimed columns.
func scanClaimed(rows *sql.Rows) (int64, []domain.OutboxEntry, error) {
	var marked int64
	var entries []domain.OutboxEntry
	cr := &claimedRow{rows: rows, marked: &marked}
	for first := true; rows.Next(); first = false {
		if first {
			cols, err := rows.Columns()
			if err != nil {
				return 0, nil, err
			}
			rest := make([]any, len(cols)-2)
			for i := range rest {
				rest[i] = new(any)
			}
			if err := cr.Scan(rest...); err != nil {
				return 0, nil, err
			}
			if !cr.claimed {
				return marked, nil, rows.Err()
			}
		}
		var e domain.OutboxEntry
		if err := outbox.Scan(cr, &e.Entry); err != nil {
			return 0, nil, err
		}
		entries = append(entries, e)
	}
	return marked, entries, rows.Err()
}

// claimedRow is an outbox.Scanner over MarkAndClaim's rows: it reads the
// two leading columns into marked and claimed, and the rest into dest.
type claimedRow struct {
	rows    *sql.Rows
	marked  *int64
	claimed bool
}

func (c *claimedRow) Scan(dest ...any) error {
	return c.rows.Scan(append([]any{c.marked, &c.claimed}, dest...)...)
}

// newToken returns a random (version 4) UUID.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("claim token: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// MarkPublished marks the rows of the claim token published in one
// statement. Only rows still publishing under that token are changed (a row
// rescued from a batch that outlived the stale age belongs to someone else
// now), and it returns how many were.
func (r *Repository) MarkPublished(ctx context.Context, token string, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := r.db.ExecContext(ctx, `
		UPDATE classified_outbox
		SET status = 'published', published_at = NOW(), updated_at = NOW(), error_message = NULL, next_retry_at = NULL,
		    claim_token = NULL
		WHERE id = ANY($1::uuid[]) AND claim_token = $2 AND status = 'publishing'`, pq.Array(ids), token)
	if err != nil {
		return 0, fmt.Errorf("mark published: %w", err)
	}
	return res.RowsAffected()
}

// Failure is the outcome of one row whose publish failed.
type Failure struct {
	ID    string
	Error string
	// RetryIn is the backoff before the row may be claimed again.
	RetryIn time.Duration
}

// Marked is what MarkFailed changed.
type Marked struct {
	// Recorded are the ids of the rows recorded (those still publishing
	// under the claim token).
	Recorded []string
	// Exhausted are the ids of the rows that have now used all their
	// retries: they stay failed, visible and re-queueable, and are no longer
	// claimed.
	Exhausted []string
}

// MarkFailed records failed publishes of the claim token's rows in one
// statement: status failed, one more retry used, the error, and
// next_retry_at = now + RetryIn. Rows no longer publishing under token are
// left alone.
func (r *Repository) MarkFailed(ctx context.Context, token string, failures []Failure) (Marked, error) {
	var m Marked
	if len(failures) == 0 {
		return m, nil
	}
	ids := make([]string, len(failures))
	msgs := make([]string, len(failures))
	secs := make([]float64, len(failures))
	for i, f := range failures {
		ids[i], msgs[i], secs[i] = f.ID, f.Error, f.RetryIn.Seconds()
	}
	rows, err := r.db.QueryContext(ctx, `
		UPDATE classified_outbox o
		SET status = 'failed', retry_count = o.retry_count + 1, error_message = f.msg,
		    next_retry_at = NOW() + make_interval(secs => f.secs), updated_at = NOW(), claim_token = NULL
		FROM unnest($1::uuid[], $2::text[], $3::float8[]) AS f(id, msg, secs)
		WHERE o.id = f.id AND o.claim_token = $4 AND o.status = 'publishing'
		RETURNING o.id, o.retry_count >= o.max_retries`, pq.Array(ids), pq.Array(msgs), pq.Array(secs), token)
	if err != nil {
		return m, fmt.Errorf("mark failed: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var done bool
		if err := rows.Scan(&id, &done); err != nil {
			return m, fmt.Errorf("mark failed: %w", err)
		}
		m.Recorded = append(m.Recorded, id)
		if done {
			m.Exhausted = append(m.Exhausted, id)
		}
	}
	if err := rows.Err(); err != nil {
		return m, fmt.Errorf("mark failed: %w", err)
	}
	return m, nil
}

// Release returns the claim token's rows that were not published to pending
// without using a retry, for a worker that stops mid-batch or cannot use
// Redis, and wakes the publishers so another one can take them. Rows no
// longer publishing under token are left alone; it returns how many moved.
func (r *Repository) Release(ctx context.Context, token string, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := r.db.ExecContext(ctx, `
		UPDATE classified_outbox SET status = 'pending', claim_token = NULL, updated_at = NOW()
		WHERE id = ANY($1::uuid[]) AND claim_token = $2 AND status = 'publishing'`, pq.Array(ids), token)
	if err != nil {
		return 0, fmt.Errorf("release claimed rows: %w", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		r.notify(ctx)
	}
	return n, nil
}

// ResetToPending returns rows left publishing for longer than stale (their worker
// died between claim and outcome) to pending. They are published again:
// at-least-once, duplicates only from the batch that was in flight. The
// claim token is cleared, so should that batch still record its outcome, it
// touches none of these rows.
func (r *Repository) ResetToPending(ctx context.Context, stale time.Duration) (int64, error) {
	res, err := r.db.ExecContext(ctx, `
		UPDATE classified_outbox SET status = 'pending', claim_token = NULL, updated_at = NOW()
		WHERE status = 'publishing' AND updated_at < NOW() - make_interval(secs => $1)`, stale.Seconds())
	if err != nil {
		return 0, fmt.Errorf("rescue stale rows: %w", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		r.notify(ctx)
	}
	return n, nil
}

// Ping checks that the database answers; it is the probe of the Postgres
// circuit breaker.
func (r *Repository) Ping(ctx context.Context) error {
	if err := r.db.PingContext(ctx); err != nil {
		return fmt.Errorf("postgres ping: %w", err)
	}
	return nil
}

// CleanupPublished deletes rows published longer ago than retention, at most
// chunk rows per statement so that no statement holds many locks for long.
// It returns the number deleted.
func (r *Repository) CleanupPublished(ctx context.Context, retention time.Duration, chunk int) (int64, error) {
	var total int64
	for {
		res, err := r.db.ExecContext(ctx, `
			DELETE FROM classified_outbox WHERE id IN (
				SELECT id FROM classified_outbox
				WHERE status = 'published' AND published_at < NOW() - make_interval(secs => $1)
				LIMIT $2)`, retention.Seconds(), chunk)
		if err != nil {
			return total, fmt.Errorf("cleanup published rows: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
		if n < int64(chunk) {
			return total, nil
		}
	}
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

// GetStats returns counts by status, failed rows split into retryable and
// exhausted, the average and 95th percentile publish lag (insert to publish)
// of the last hour, and the age of the oldest pending row.
func (r *Repository) GetStats(ctx context.Context) (domain.OutboxStats, error) {
	return r.StatsMatching(ctx, domain.OutboxFilter{})
}

// StatsMatching is GetStats over the rows matching f, so that the figures
// beside a filtered list count what the list shows.
func (r *Repository) StatsMatching(ctx context.Context, f domain.OutboxFilter) (domain.OutboxStats, error) {
	w := filterSQL(f)
	s := domain.OutboxStats{Counts: map[domain.OutboxStatus]int64{
		domain.OutboxStatusPending: 0, domain.OutboxStatusPublishing: 0,
		domain.OutboxStatusPublished: 0, domain.OutboxStatusFailed: 0,
	}}
	err := r.db.QueryRowContext(ctx, `
		SELECT
			COUNT(*) FILTER (WHERE status = 'pending'),
			COUNT(*) FILTER (WHERE status = 'publishing'),
			COUNT(*) FILTER (WHERE status = 'published'),
			COUNT(*) FILTER (WHERE status = 'failed'),
			COUNT(*) FILTER (WHERE status = 'failed' AND retry_count < max_retries),
			COUNT(*) FILTER (WHERE status = 'failed' AND retry_count >= max_retries),
			COALESCE(AVG(EXTRACT(EPOCH FROM (published_at - created_at)))
				FILTER (WHERE status = 'published' AND published_at > NOW() - INTERVAL '1 hour'), 0),
			COALESCE(percentile_cont(0.95) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM (published_at - created_at)))
				FILTER (WHERE status = 'published' AND published_at > NOW() - INTERVAL '1 hour'), 0),
			COALESCE(EXTRACT(EPOCH FROM (NOW() - MIN(created_at) FILTER (WHERE status = 'pending'))), 0)
		FROM classified_outbox`+w.Where(), w.Args()...).Scan(
		ptr(s.Counts, domain.OutboxStatusPending), ptr(s.Counts, domain.OutboxStatusPublishing),
		ptr(s.Counts, domain.OutboxStatusPublished), ptr(s.Counts, domain.OutboxStatusFailed),
		&s.FailedRetryable, &s.FailedExhausted,
		&s.AvgPublishLagSeconds, &s.P95PublishLagSeconds, &s.OldestPendingAgeSeconds)
	if err != nil {
		return s, fmt.Errorf("outbox stats: %w", err)
	}
	return s, nil
}

// ptr scans into a map value.
func ptr(m map[domain.OutboxStatus]int64, k domain.OutboxStatus) any {
	return scanFunc(func(v int64) { m[k] = v })
}

type scanFunc func(int64)

func (f scanFunc) Scan(src any) error {
	v, ok := src.(int64)
	if !ok {
		return fmt.Errorf("scan count: unexpected %T", src)
	}
	f(v)
	return nil
}

// Backlog is what the backlog gauges report.
type Backlog struct {
	Counts                  map[domain.OutboxStatus]int64
	OldestPendingAgeSeconds float64
}

// Backlog returns counts by status and the age of the oldest pending row,
// for the observable gauges read at scrape time.
func (r *Repository) Backlog(ctx context.Context) (Backlog, error) {
	counts, err := r.CountByStatus(ctx)
	if err != nil {
		return Backlog{}, err
	}
	b := Backlog{Counts: counts}
	// The oldest pending row is the oldest of the first crime row and the
	// first other row of idx_outbox_claim: two index probes, not a scan of
	// every pending row.
	if err := r.db.QueryRowContext(ctx, `
		SELECT COALESCE(EXTRACT(EPOCH FROM (NOW() - LEAST(
			(SELECT MIN(created_at) FROM classified_outbox WHERE status = 'pending' AND is_crime_related),
			(SELECT MIN(created_at) FROM classified_outbox WHERE status = 'pending' AND NOT is_crime_related)))), 0)`).
		Scan(&b.OldestPendingAgeSeconds); err != nil {
		return b, fmt.Errorf("oldest pending age: %w", err)
	}
	return b, nil
}

// List returns up to limit entries matching f, newest first, starting after
// the cursor (nil for the first page), and the cursor of the next page (nil
// on the last page).
func (r *Repository) List(ctx context.Context, f domain.OutboxFilter, after *domain.Cursor, limit int) ([]domain.OutboxEntry, *domain.Cursor, error) {
	w := filterSQL(f)
	if after != nil {
		w.Add("(created_at, id) < (?, ?::uuid)", after.CreatedAt, after.ID)
	}
	query := `SELECT ` + outbox.SelectList() + ` FROM classified_outbox` + w.Where() +
		` ORDER BY created_at DESC, id DESC LIMIT ` + w.Arg(limit+1)
	rows, err := r.db.QueryContext(ctx, query, w.Args()...)
	if err != nil {
		return nil, nil, fmt.Errorf("list outbox: %w", err)
	}
	defer rows.Close()
	entries, err := scanEntries(rows)
	if err != nil {
		return nil, nil, fmt.Errorf("list outbox: %w", err)
	}
	if len(entries) <= limit {
		return entries, nil, nil
	}
	entries = entries[:limit]
	last := entries[limit-1]
	return entries, &domain.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}, nil
}

// filterSQL returns the conditions f selects, with their arguments.
func filterSQL(f domain.OutboxFilter) *sqlwhere.Builder {
	var w sqlwhere.Builder
	if f.Status != "" {
		w.Add("status = ?", string(f.Status))
	}
	if f.Source != "" {
		w.Add("source_name = ?", f.Source)
	}
	if f.SourceContains != "" {
		w.Add("strpos(lower(source_name), lower(?)) > 0", f.SourceContains)
	}
	if f.Channel != "" {
		w.Add("channel = ?", f.Channel)
	}
	if f.ContentID != "" {
		w.Add("content_id = ?", f.ContentID)
	}
	if f.Index != "" {
		w.Add("index_name = ?", f.Index)
	}
	if f.Crime != nil {
		w.Add("is_crime_related = ?", *f.Crime)
	}
	if f.Exhausted != nil {
		if *f.Exhausted {
			w.Add("status = 'failed' AND retry_count >= max_retries")
		} else {
			w.Add("status = 'failed' AND retry_count < max_retries")
		}
	}
	return &w
}

// Get returns one entry, or domain.ErrNotFound.
func (r *Repository) Get(ctx context.Context, id string) (domain.OutboxEntry, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+outbox.SelectList()+` FROM classified_outbox WHERE id = $1`, id)
	if err != nil {
		return domain.OutboxEntry{}, fmt.Errorf("get outbox entry: %w", err)
	}
	defer rows.Close()
	entries, err := scanEntries(rows)
	if err != nil {
		return domain.OutboxEntry{}, fmt.Errorf("get outbox entry: %w", err)
	}
	if len(entries) == 0 {
		return domain.OutboxEntry{}, domain.ErrNotFound
	}
	return entries[0], nil
}

// Requeue puts one failed (retryable or exhausted) or published row back to
// pending with a fresh set of retries, and returns it. Re-queueing a
// published row publishes it again: the operator's way to re-send a
// document. A row that is pending or publishing is domain.ErrConflict; an
// unknown id is domain.ErrNotFound.
func (r *Repository) Requeue(ctx context.Context, id string) (domain.OutboxEntry, error) {
	rows, err := r.db.QueryContext(ctx, `
		UPDATE classified_outbox
		SET status = 'pending', retry_count = 0, next_retry_at = NULL, claim_token = NULL, updated_at = NOW()
		WHERE id = $1 AND status IN ('failed', 'published')
		RETURNING `+outbox.SelectList(), id)
	if err != nil {
		return domain.OutboxEntry{}, fmt.Errorf("requeue outbox entry: %w", err)
	}
	entries, err := scanEntries(rows)
	rows.Close()
	if err != nil {
		return domain.OutboxEntry{}, fmt.Errorf("requeue outbox entry: %w", err)
	}
	if len(entries) == 1 {
		r.notify(ctx)
		return entries[0], nil
	}
	if _, err := r.Get(ctx, id); err != nil {
		return domain.OutboxEntry{}, err
	}
	return domain.OutboxEntry{}, fmt.Errorf("requeue %s: only failed or published rows can be re-queued: %w", id, domain.ErrConflict)
}

// RequeueMatching puts every failed row matching f back to pending with a
// fresh set of retries and returns how many it moved. f.Status must be
// empty or failed.
func (r *Repository) RequeueMatching(ctx context.Context, f domain.OutboxFilter) (int64, error) {
	if f.Status != "" && f.Status != domain.OutboxStatusFailed {
		return 0, fmt.Errorf("requeue: only failed rows can be re-queued in bulk (got status %q): %w", f.Status, domain.ErrConflict)
	}
	f.Status = domain.OutboxStatusFailed
	w := filterSQL(f)
	res, err := r.db.ExecContext(ctx, `
		UPDATE classified_outbox
		SET status = 'pending', retry_count = 0, next_retry_at = NULL, claim_token = NULL, updated_at = NOW()
		WHERE `+w.Cond(), w.Args()...)
	if err != nil {
		return 0, fmt.Errorf("requeue matching: %w", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		r.notify(ctx)
	}
	return n, nil
}

// Channels returns every channel present in the outbox (within the
// retention window) with its publishes over the last hour and day.
func (r *Repository) Channels(ctx context.Context) ([]domain.ChannelStats, error) {
	rows, err := r.db.QueryContext(ctx, `
		SELECT channel,
			COUNT(*) FILTER (WHERE status = 'published' AND published_at > NOW() - INTERVAL '1 hour'),
			COUNT(*) FILTER (WHERE status = 'published' AND published_at > NOW() - INTERVAL '1 day'),
			COUNT(*) FILTER (WHERE status <> 'published'),
			MAX(published_at)
		FROM classified_outbox GROUP BY channel ORDER BY channel`)
	if err != nil {
		return nil, fmt.Errorf("channel stats: %w", err)
	}
	defer rows.Close()
	out := []domain.ChannelStats{}
	for rows.Next() {
		var c domain.ChannelStats
		if err := rows.Scan(&c.Channel, &c.PublishedLastHour, &c.PublishedLastDay, &c.Unpublished, &c.LastPublishedAt); err != nil {
			return nil, fmt.Errorf("channel stats: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// notify wakes listening publishers (outbox.Wake, as the classifier does
// after its inserts); a lost notification only delays the work until the
// next poll, so its error is ignored.
func (r *Repository) notify(ctx context.Context) {
	_ = outbox.Wake(ctx, r.db)
}

func scanEntries(rows *sql.Rows) ([]domain.OutboxEntry, error) {
	var entries []domain.OutboxEntry
	for rows.Next() {
		var e domain.OutboxEntry
		if err := outbox.Scan(rows, &e.Entry); err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, rows.Err()
}

// IsInvalidID reports whether err is Postgres refusing a malformed uuid.
func IsInvalidID(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "22P02"
}
