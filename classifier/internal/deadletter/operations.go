package deadletter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/sqlwhere"
)

// Filter selects entries for the operator's list and bulk requeue.
type Filter struct {
	Source string
	// NoSource selects the entries recorded without a source name (a
	// document whose source_name was empty): an empty Source means any
	// source, so it cannot select them.
	NoSource  bool
	ErrorCode string
	// ContentID and Index, when set, select the entries of one document
	// (exact content id) or one raw index (exact name).
	ContentID string
	Index     string
	// Exhausted, when set, selects exhausted (true) or retryable (false) entries.
	Exhausted *bool
	// Permanent, when set, selects the entries made permanent by repeated
	// identical failures (true) or the others (false).
	Permanent *bool
}

// where returns the conditions f selects, with their arguments.
func (f Filter) where() *sqlwhere.Builder {
	var w sqlwhere.Builder
	if f.Source != "" {
		w.Add("source_name = ?", f.Source)
	}
	if f.NoSource {
		w.Add("source_name = ''")
	}
	if f.ErrorCode != "" {
		w.Add("error_code = ?", f.ErrorCode)
	}
	if f.ContentID != "" {
		w.Add("content_id = ?", f.ContentID)
	}
	if f.Index != "" {
		w.Add("index_name = ?", f.Index)
	}
	if f.Exhausted != nil {
		if *f.Exhausted {
			w.Add("retry_count >= max_retries")
		} else {
			w.Add("retry_count < max_retries")
		}
	}
	if f.Permanent != nil {
		if *f.Permanent {
			w.Add("permanent_at IS NOT NULL")
		} else {
			w.Add("permanent_at IS NULL")
		}
	}
	return &w
}

// Cursor is the position after the last entry of a page (newest first).
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// List returns up to limit entries matching f, newest first, after cursor.
func (r *Repository) List(ctx context.Context, f Filter, after *Cursor, limit int) ([]domain.DeadLetterEntry, error) {
	w := f.where()
	if after != nil {
		w.Add("(created_at, id) < (?, ?::uuid)", after.CreatedAt, after.ID)
	}
	limitArg := w.Arg(limit)
	rows, err := r.db.QueryContext(ctx, `SELECT `+entryColumns+` FROM dead_letter_queue WHERE `+w.Cond()+
		` ORDER BY created_at DESC, id DESC LIMIT `+limitArg, w.Args()...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	defer rows.Close()
	return r.scanEntries(rows)
}

// Requeue makes one entry due now with its retries reset. An entry that was
// never retryable (a validation error) gets one attempt; a permanent one
// gets its code's retries back and a new streak.
func (r *Repository) Requeue(ctx context.Context, id string) error {
	res, err := r.db.ExecContext(ctx, `UPDATE dead_letter_queue SET `+requeueSet()+` WHERE id = $1::uuid AND error_code <> ALL($2)`,
		id, pq.Array(permanentCodes()))
	if err != nil {
		return fmt.Errorf("requeue dead letter %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var code domain.ErrorCode
	switch err := r.db.QueryRowContext(ctx, `SELECT error_code FROM dead_letter_queue WHERE id = $1::uuid`, id).Scan(&code); {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("requeue dead letter %s: %w", id, err)
	}
	return &PermanentError{ID: id, Code: code}
}

// Attempt is one failure of a dead letter's document: its first (Retry 0)
// or its n-th retry.
type Attempt struct {
	At           time.Time `json:"at"`
	ErrorCode    string    `json:"error_code"`
	ErrorMessage string    `json:"error_message"`
	Retry        int       `json:"retry"`
}

// Attempts returns an entry's attempts, oldest first: the last
// AttemptsKept of them.
func (r *Repository) Attempts(ctx context.Context, id string) ([]Attempt, error) {
	var raw []byte
	err := r.db.QueryRowContext(ctx, `SELECT attempts FROM dead_letter_queue WHERE id = $1::uuid`, id).Scan(&raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("dead letter %s attempts: %w", id, err)
	}
	out := []Attempt{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("dead letter %s attempts: %w", id, err)
	}
	return out, nil
}

// PermanentError refuses the retry of an entry whose error code is
// permanent (domain.ErrorCode.Permanent).
type PermanentError struct {
	ID   string
	Code domain.ErrorCode
}

func (e *PermanentError) Error() string {
	return fmt.Sprintf("dead letter %s is not retried: %s", e.ID, e.Code.NotRetryableReason())
}

// permanentCodes are domain.PermanentCodes as text.
func permanentCodes() []string {
	codes := domain.PermanentCodes()
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = string(c)
	}
	return out
}

// requeueSet is the SET clause of a re-queue.
func requeueSet() string {
	return fmt.Sprintf(`retry_count = 0,
		max_retries = CASE WHEN permanent_at IS NULL THEN GREATEST(max_retries, 1) ELSE GREATEST(max_retries, %d) END,
		next_retry_at = NOW(), failure_streak = 0, permanent_reason = NULL, permanent_at = NULL`, domain.MaxRetriesDefault)
}

// Requeued is what a bulk requeue did: the entries re-queued, and those
// matching the filter it skipped because their error code is permanent,
// by code.
type Requeued struct {
	Requeued int64            `json:"requeued"`
	Skipped  int64            `json:"skipped"`
	ByCode   map[string]int64 `json:"skipped_by_code"`
}

// RequeueMatching requeues every entry matching f whose error code is not
// permanent, and says how many it requeued and skipped, in one statement.
func (r *Repository) RequeueMatching(ctx context.Context, f Filter) (Requeued, error) {
	w := f.where()
	codes := w.Arg(pq.Array(permanentCodes()))
	rows, err := r.db.QueryContext(ctx, `WITH matched AS (SELECT id, error_code FROM dead_letter_queue WHERE `+w.Cond()+`),
		done AS (UPDATE dead_letter_queue SET `+requeueSet()+`
			WHERE id IN (SELECT id FROM matched WHERE error_code <> ALL(`+codes+`)) RETURNING 1)
		SELECT '', COUNT(*) FROM done
		UNION ALL SELECT error_code, COUNT(*) FROM matched WHERE error_code = ANY(`+codes+`) GROUP BY error_code`, w.Args()...)
	if err != nil {
		return Requeued{}, fmt.Errorf("requeue dead letters: %w", err)
	}
	defer rows.Close()
	out := Requeued{ByCode: map[string]int64{}}
	for rows.Next() {
		var code string
		var n int64
		if err := rows.Scan(&code, &n); err != nil {
			return Requeued{}, fmt.Errorf("requeue dead letters: %w", err)
		}
		if code == "" {
			out.Requeued = n
			continue
		}
		out.ByCode[code] = n
		out.Skipped += n
	}
	if err := rows.Err(); err != nil {
		return Requeued{}, fmt.Errorf("requeue dead letters: %w", err)
	}
	return out, nil
}

// DeleteMatching deletes every entry matching f and returns how many; the
// documents stay failed in Elasticsearch.
func (r *Repository) DeleteMatching(ctx context.Context, f Filter) (int64, error) {
	w := f.where()
	res, err := r.db.ExecContext(ctx, `DELETE FROM dead_letter_queue WHERE `+w.Cond(), w.Args()...)
	if err != nil {
		return 0, fmt.Errorf("delete dead letters: %w", err)
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
