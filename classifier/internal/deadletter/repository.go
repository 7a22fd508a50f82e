package deadletter

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/clock"
)

// ErrNotFound is returned for an unknown entry id.
var ErrNotFound = errors.New("dead-letter entry not found")

// RepositoryConfig configures a Repository.
type RepositoryConfig struct {
	// PermanentAfter is how many consecutive failures of a document with
	// the same error code and Signature make its entry permanent: it stops
	// retrying early, with the reason. At least 2. Defaults to
	// PermanentAfterDefault.
	PermanentAfter int
	// Metrics, when set, counts documents entering the queue and entries
	// made permanent, by source and error code.
	Metrics *telemetry.Metrics
	// Logger logs every entry made permanent. Defaults to discarding.
	Logger *slog.Logger
	// Clock stamps a first failure's next_retry_at. Defaults to the system
	// clock.
	Clock clock.Clock
	// Policies are the retry schedules by error code; a code without one
	// follows the default (1, 2, 4, 8, 16 minutes, at most an hour apart,
	// 5 retries; none for VALIDATION_ERROR and NOT_FOUND).
	Policies Policies
}

func (c *RepositoryConfig) setDefaults() {
	if c.PermanentAfter == 0 {
		c.PermanentAfter = PermanentAfterDefault
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

func (c RepositoryConfig) validate() error {
	if c.PermanentAfter < 2 || c.PermanentAfter > 1000 {
		return fmt.Errorf("PermanentAfter must be 2..1000 (got %d)", c.PermanentAfter)
	}
	return nil
}

// Repository reads and writes dead_letter_queue.
type Repository struct {
	db  *sql.DB
	cfg RepositoryConfig
	// record is Record's upsert after its VALUES, built once from cfg.
	record string
}

// NewRepository returns a repository over the classifier's database with
// the default configuration.
func NewRepository(db *sql.DB) *Repository {
	r, _ := NewRepositoryWith(db, RepositoryConfig{}) // the defaults are valid
	return r
}

// NewRepositoryWith returns a repository over the classifier's database
// configured by cfg.
func NewRepositoryWith(db *sql.DB, cfg RepositoryConfig) (*Repository, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new dead-letter repository: %w", err)
	}
	cfg.Logger = cfg.Logger.With("component", "dead_letter_queue")
	return &Repository{db: db, cfg: cfg, record: recordUpsert(cfg.PermanentAfter, cfg.Policies)}, nil
}

const entryColumns = `id, content_id, source_name, index_name, error_message, COALESCE(error_code, 'UNKNOWN'),
	retry_count, max_retries, next_retry_at, created_at, last_attempt_at, failure_streak, permanent_reason, permanent_at`

// recordUpsert is the ON CONFLICT clause of Record. A failure with the same
// code and signature as the entry's last one extends its streak, any other
// starts a new streak of one; a streak that reaches permanentAfter, of a
// code not among dependencyCodes, lowers max_retries to the retry count (the
// entry is exhausted) and records the reason.
// Each retry waits twice the wait before it (the first is the jittered
// Initial of the code's schedule, stored as the first next_retry_at), at
// most the code's Max.
func recordUpsert(permanentAfter int, policies Policies) string {
	longest := "CASE EXCLUDED.error_code"
	for _, c := range ErrorCodes() {
		longest += fmt.Sprintf(" WHEN %s THEN %d", pq.QuoteLiteral(string(c)), int64(policies.For(c).Max.Seconds()))
	}
	longest += fmt.Sprintf(" ELSE %d END", int64(domain.RetryMaxDefault.Seconds()))
	var ineligible []string
	for _, c := range dependencyCodes() {
		ineligible = append(ineligible, pq.QuoteLiteral(string(c)))
	}
	streak := `(CASE WHEN dead_letter_queue.error_code IS NOT DISTINCT FROM EXCLUDED.error_code
		AND dead_letter_queue.failure_signature IS NOT DISTINCT FROM EXCLUDED.failure_signature
		THEN dead_letter_queue.failure_streak + 1 ELSE 1 END)`
	permanent := fmt.Sprintf(`(%s >= %d AND EXCLUDED.error_code NOT IN (%s))`, streak, permanentAfter, strings.Join(ineligible, ","))
	return `
		ON CONFLICT (index_name, content_id) DO UPDATE SET
			retry_count = dead_letter_queue.retry_count + 1,
			error_message = EXCLUDED.error_message,
			error_code = EXCLUDED.error_code,
			source_name = EXCLUDED.source_name,
			failure_signature = EXCLUDED.failure_signature,
			failure_streak = ` + streak + `,
			max_retries = CASE WHEN ` + permanent + ` THEN dead_letter_queue.retry_count + 1 ELSE dead_letter_queue.max_retries END,
			permanent_at = CASE WHEN ` + permanent + ` THEN NOW() END,
			permanent_reason = CASE WHEN ` + permanent + ` THEN format('failed %s times in a row with %s: %s',
				` + streak + `, EXCLUDED.error_code, EXCLUDED.failure_signature) END,
			last_attempt_at = NOW(),
			attempts = ` + appendAttempt(`dead_letter_queue.attempts`,
		attemptJSON(`EXCLUDED.error_code`, `EXCLUDED.error_message`, `dead_letter_queue.retry_count + 1`)) + `,
			next_retry_at = LEAST(
				NOW() + (EXCLUDED.next_retry_at - NOW()) * POWER(2, dead_letter_queue.retry_count + 1),
				NOW() + make_interval(secs => ` + longest + `))
		WHERE dead_letter_queue.retry_count < dead_letter_queue.max_retries
		RETURNING index_name, content_id, source_name, COALESCE(error_code, 'UNKNOWN'), (xmax = 0) AS inserted,
			retry_count >= max_retries AND max_retries > 0 AS exhausted, COALESCE(permanent_reason, '')`
}

// AttemptsKept is how many attempts an entry keeps (its attempts column):
// the newest, the oldest dropped. AttemptMessageChars bounds each one's
// message.
const (
	AttemptsKept        = 20
	AttemptMessageChars = 1000
)

// attemptJSON is the SQL of one attempt (a one-element array): now, with
// code, message (cut to AttemptMessageChars) and retry (0 for the first
// failure, n for the n-th retry).
func attemptJSON(code, message, retry string) string {
	return fmt.Sprintf(`jsonb_build_array(jsonb_build_object('at', NOW(), 'error_code', %s, 'error_message', LEFT(%s, %d), 'retry', %s))`,
		code, message, AttemptMessageChars, retry)
}

// appendAttempt is the SQL of attempts with one more appended, the oldest
// dropped past AttemptsKept (one is appended at a time, so one drop keeps
// the bound).
func appendAttempt(attempts, attempt string) string {
	x := attempts + ` || ` + attempt
	return fmt.Sprintf(`(CASE WHEN jsonb_array_length(%s) > %d THEN (%s) - 0 ELSE %s END)`, x, AttemptsKept, x, x)
}

// storableRows returns failures keyed as they are stored, one per stored
// key. Every key is made storable (admission.Storable): a failure must reach
// the queue even when what failed is the document's own id or source. Two
// documents whose ids differ only by what storing removes (a NUL byte:
// "poi\x00son" and "poison\x00") are one stored key; Postgres refuses an
// upsert that touches one row twice (SQLSTATE 21000), so only the first
// failure of a stored key is kept. The rows are sorted by key, so
// concurrent Records take their rows' locks in one order.
func storableRows(entries []domain.DeadLetterEntry) []domain.DeadLetterEntry {
	seen := make(map[domain.DocKey]bool, len(entries))
	out := make([]domain.DeadLetterEntry, 0, len(entries))
	for _, f := range entries {
		f.ContentID, f.SourceName, f.IndexName = admission.Storable(f.ContentID, 512), admission.Storable(f.SourceName, 255), admission.Storable(f.IndexName, 255)
		key := f.Key()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b domain.DeadLetterEntry) int {
		return cmp.Or(strings.Compare(a.IndexName, b.IndexName), strings.Compare(a.ContentID, b.ContentID))
	})
	return out
}

// Recorded tells what EnqueueBatch did to one entry.
type Recorded struct {
	// Index and ContentID name the document (its raw index and _id).
	Index     string
	ContentID string
	// Inserted is true for a document's first failure.
	Inserted bool
	// Exhausted is true when this failure used the entry's last retry, or
	// made the entry permanent.
	Exhausted bool
	// PermanentReason is set when this failure made the entry permanent:
	// the same failure PermanentAfter times in a row.
	PermanentReason string
}

// Enqueue adds one failed document to the queue, as EnqueueBatch does.
// Only the entry's document (ContentID, SourceName, IndexName) and failure
// (ErrorCode, ErrorMessage) are read: the schedule is the repository's
// policy for the code.
func (r *Repository) Enqueue(ctx context.Context, entry *domain.DeadLetterEntry) error {
	_, err := r.EnqueueBatch(ctx, []domain.DeadLetterEntry{*entry})
	return err
}

// EnqueueBatch enqueues failed documents in one statement. A document's
// first failure is inserted with the first delay of its code's policy (with
// jitter); a document already in the queue has its retry count raised and
// its delay doubled per retry (DeadLetterEntry.NextRetryDelay), capped at
// the policy's Max, unless this failure is the same as the last
// PermanentAfter-1 (same code, same Signature), which makes the entry
// permanent: no retries left, and the reason recorded. Entries that are
// already exhausted are left alone. Validation errors are inserted with no
// retries. Entries whose keys are one once stored are one entry
// (storableRows).
func (r *Repository) EnqueueBatch(ctx context.Context, entries []domain.DeadLetterEntry) ([]Recorded, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO dead_letter_queue
		(content_id, source_name, index_name, error_message, error_code, max_retries, next_retry_at, failure_signature, attempts) VALUES `)
	stored := storableRows(entries)
	args := make([]any, 0, len(stored)*10)
	now := r.cfg.Clock.Now()
	for i, f := range stored {
		if i > 0 {
			q.WriteString(",")
		}
		n := len(args)
		// The first attempt takes the code and message again as text
		// (a parameter has one type: the columns' are varchar).
		fmt.Fprintf(&q, "($%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,%s)", n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8,
			attemptJSON(fmt.Sprintf("$%d::text", n+9), fmt.Sprintf("$%d::text", n+10), "0"))
		message := admission.Storable(f.ErrorMessage, 4000)
		args = append(args, f.ContentID, f.SourceName, f.IndexName, message, string(f.ErrorCode),
			r.cfg.Policies.For(f.ErrorCode).Retries, now.Add(r.cfg.Policies.backoff(f.ErrorCode).Delay(0)), Signature(f.ErrorMessage),
			string(f.ErrorCode), message)
	}
	q.WriteString(r.record)
	rows, err := r.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("enqueue dead letters: %w", err)
	}
	defer rows.Close()
	var out []Recorded
	for rows.Next() {
		var rec Recorded
		var source, code string
		if err := rows.Scan(&rec.Index, &rec.ContentID, &source, &code, &rec.Inserted, &rec.Exhausted, &rec.PermanentReason); err != nil {
			return nil, fmt.Errorf("enqueue dead letters: %w", err)
		}
		r.account(ctx, rec, source, code)
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("enqueue dead letters: %w", err)
	}
	return out, nil
}

// account counts and logs what EnqueueBatch did to one document.
func (r *Repository) account(ctx context.Context, rec Recorded, source, code string) {
	attrs := metric.WithAttributes(attribute.String("source", source), attribute.String("error_code", code))
	if rec.Inserted && r.cfg.Metrics != nil {
		r.cfg.Metrics.DLQEntries.Add(ctx, 1, attrs)
	}
	if rec.PermanentReason == "" {
		return
	}
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.DLQPermanent.Add(ctx, 1, attrs)
	}
	r.cfg.Logger.WarnContext(ctx, "dead-letter entry is permanent: no more retries until it is re-queued",
		"content_id", rec.ContentID, "index", rec.Index, "source", source, "error_code", code, "reason", rec.PermanentReason)
}

// ClaimRequest says what one FetchRetryable may take.
type ClaimRequest struct {
	// Limit is the most entries claimed.
	Limit int
	// Lease keeps the claimed entries from other workers and replicas.
	Lease time.Duration
	// SourceBudget is the most retries one source may spend in a Window.
	// Defaults to SourceBudgetDefault.
	SourceBudget int
	// Window is the budget's period; windows are aligned on the Unix epoch,
	// so every replica agrees on them. Defaults to BudgetWindowDefault.
	Window time.Duration
}

// Defaults of ClaimRequest.
const (
	SourceBudgetDefault = 100
	BudgetWindowDefault = 10 * time.Minute
)

// deferBatch bounds how many due entries of a source over its budget one
// claim moves to the next window; the next claims move the rest.
const deferBatch = 1000

// claimLockKey serializes the claims of every worker and replica (a
// transaction-scoped advisory lock), so two never spend the same remaining
// budget. Claims are short and come every few seconds per replica.
const claimLockKey = 0x646c7163 // "dlqc"

// Claim is what one FetchRetryable took, and what it held back.
type Claim struct {
	// Entries are the claimed entries, leased to the caller.
	Entries []domain.DeadLetterEntry
	// Deferred counts, per source that has spent its budget, the due
	// entries moved to NextWindow.
	Deferred map[string]int
	// NextWindow is when the current budget window ends: the deferred
	// entries' next_retry_at.
	NextWindow time.Time
}

// FetchRetryable claims up to req.Limit entries whose retry is due and moves
// their next_retry_at lease ahead in the same transaction, so that no other
// worker or replica claims them while this one works; if the worker dies,
// an entry is due again when its lease passes.
//
// Each source spends at most req.SourceBudget retries per window: the
// entries are taken in turns, one per source with due entries, each
// source's oldest first, while its budget lasts. A source that has spent
// its budget keeps its due entries waiting: they are moved to the start of
// the next window (their next_retry_at says so), counted in
// classifier_dlq_retries_deferred_total and logged, while the other
// sources' entries are retried.
func (r *Repository) FetchRetryable(ctx context.Context, req ClaimRequest) (*Claim, error) {
	if req.SourceBudget <= 0 {
		req.SourceBudget = SourceBudgetDefault
	}
	if req.Window <= 0 {
		req.Window = BudgetWindowDefault
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch retryable dead letters: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	claim, err := r.claimDue(ctx, tx, req)
	if err != nil {
		return nil, fmt.Errorf("fetch retryable dead letters: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("fetch retryable dead letters: %w", err)
	}
	r.accountClaim(ctx, claim, req)
	return claim, nil
}

func (r *Repository) claimDue(ctx context.Context, tx *sql.Tx, req ClaimRequest) (*Claim, error) {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, claimLockKey); err != nil {
		return nil, err
	}
	var windowStart time.Time
	claim := &Claim{Deferred: map[string]int{}}
	secs := req.Window.Seconds()
	if err := tx.QueryRowContext(ctx, `SELECT to_timestamp(floor(extract(epoch FROM NOW()) / $1) * $1),
		to_timestamp((floor(extract(epoch FROM NOW()) / $1) + 1) * $1)`, secs).Scan(&windowStart, &claim.NextWindow); err != nil {
		return nil, err
	}
	// The sources with retryable entries (a walk of the index, one step
	// per source), each one's budget left in this window, and each one's
	// oldest due entries within it; then turns across sources.
	rows, err := tx.QueryContext(ctx, `
		WITH RECURSIVE src AS (
			(SELECT source_name FROM dead_letter_queue WHERE retry_count < max_retries ORDER BY source_name LIMIT 1)
			UNION ALL
			SELECT (SELECT d.source_name FROM dead_letter_queue d
			         WHERE d.retry_count < d.max_retries AND d.source_name > src.source_name
			         ORDER BY d.source_name LIMIT 1)
			FROM src WHERE src.source_name IS NOT NULL
		), budget AS (
			SELECT src.source_name, GREATEST($3 - COALESCE(b.spent, 0), 0) AS remaining
			FROM src LEFT JOIN dlq_retry_budgets b ON b.source_name = src.source_name AND b.window_start = $4
			WHERE src.source_name IS NOT NULL
		), picked AS (
			SELECT c.id, c.next_retry_at, row_number() OVER (PARTITION BY budget.source_name ORDER BY c.next_retry_at, c.id) AS turn
			FROM budget CROSS JOIN LATERAL (
				SELECT d.id, d.next_retry_at FROM dead_letter_queue d
				WHERE d.source_name = budget.source_name AND d.retry_count < d.max_retries AND d.next_retry_at <= NOW()
				ORDER BY d.next_retry_at LIMIT LEAST(budget.remaining, $1)
				FOR UPDATE SKIP LOCKED) c
		)
		UPDATE dead_letter_queue SET next_retry_at = NOW() + make_interval(secs => $2), last_attempt_at = NOW()
		WHERE id IN (SELECT id FROM picked ORDER BY turn, next_retry_at LIMIT $1)
		RETURNING `+entryColumns, req.Limit, req.Lease.Seconds(), req.SourceBudget, windowStart)
	if err != nil {
		return nil, err
	}
	claim.Entries, err = r.scanEntries(rows)
	rows.Close()
	if err != nil {
		return nil, err
	}
	spent := map[string]int{}
	for _, e := range claim.Entries {
		spent[e.SourceName]++
	}
	if len(spent) > 0 {
		sources, counts := make([]string, 0, len(spent)), make([]int64, 0, len(spent))
		for s, n := range spent {
			sources, counts = append(sources, s), append(counts, int64(n))
		}
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO dlq_retry_budgets (source_name, window_start, spent)
			SELECT s, $1, n FROM unnest($2::text[], $3::int[]) AS t(s, n)
			ON CONFLICT (source_name) DO UPDATE SET
				spent = CASE WHEN dlq_retry_budgets.window_start = EXCLUDED.window_start
				             THEN dlq_retry_budgets.spent + EXCLUDED.spent ELSE EXCLUDED.spent END,
				window_start = EXCLUDED.window_start`, windowStart, pq.Array(sources), pq.Array(counts)); err != nil {
			return nil, err
		}
	}
	// The sources that have spent their budget wait for the next window.
	rows, err = tx.QueryContext(ctx, `
		UPDATE dead_letter_queue SET next_retry_at = $3
		WHERE id IN (
			SELECT d.id FROM dlq_retry_budgets b CROSS JOIN LATERAL (
				SELECT id FROM dead_letter_queue d
				WHERE d.source_name = b.source_name AND d.retry_count < d.max_retries AND d.next_retry_at <= NOW()
				ORDER BY d.next_retry_at LIMIT $4
				FOR UPDATE SKIP LOCKED) d
			WHERE b.window_start = $1 AND b.spent >= $2)
		RETURNING source_name`, windowStart, req.SourceBudget, claim.NextWindow, deferBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		claim.Deferred[s]++
	}
	return claim, rows.Err()
}

// accountClaim counts and logs what one claim spent and held back.
func (r *Repository) accountClaim(ctx context.Context, claim *Claim, req ClaimRequest) {
	if r.cfg.Metrics != nil {
		for _, e := range claim.Entries {
			r.cfg.Metrics.DLQRetryClaims.Add(ctx, 1, metric.WithAttributes(attribute.String("source", e.SourceName)))
		}
	}
	for source, n := range claim.Deferred {
		if r.cfg.Metrics != nil {
			r.cfg.Metrics.DLQRetriesDeferred.Add(ctx, int64(n), metric.WithAttributes(attribute.String("source", source)))
		}
		r.cfg.Logger.WarnContext(ctx, "source spent its dead-letter retry budget: its due entries wait for the next window",
			"source", source, "deferred", n, "budget", req.SourceBudget, "window", req.Window.String(), "next_retry_at", claim.NextWindow)
	}
}

// Remove deletes the entries of documents that have now been classified
// and returns how many there were. A document is its raw index and id: ids
// are unique only within an index.
func (r *Repository) Remove(ctx context.Context, docs ...domain.DocKey) (int64, error) {
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
		return 0, fmt.Errorf("remove dead letters: %w", err)
	}
	return res.RowsAffected()
}

// MarkExhausted spends the remaining retries of doc's entry: it stays in
// the queue, visible and re-queueable, and is no longer retried. It returns
// ErrNotFound when doc has no entry.
func (r *Repository) MarkExhausted(ctx context.Context, doc domain.DocKey) error {
	res, err := r.db.ExecContext(ctx, `UPDATE dead_letter_queue SET retry_count = max_retries, last_attempt_at = NOW()
		WHERE index_name = $1 AND content_id = $2`, doc.Index, doc.ID)
	if err != nil {
		return fmt.Errorf("mark dead letter %s/%s exhausted: %w", doc.Index, doc.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

func (r *Repository) scanEntries(rows *sql.Rows) ([]domain.DeadLetterEntry, error) {
	var out []domain.DeadLetterEntry
	for rows.Next() {
		var e domain.DeadLetterEntry
		var reason sql.NullString
		var permanentAt sql.NullTime
		if err := rows.Scan(&e.ID, &e.ContentID, &e.SourceName, &e.IndexName, &e.ErrorMessage, &e.ErrorCode,
			&e.RetryCount, &e.MaxRetries, &e.NextRetryAt, &e.CreatedAt, &e.LastAttemptAt, &e.FailureStreak, &reason, &permanentAt); err != nil {
			return nil, fmt.Errorf("scan dead letter: %w", err)
		}
		e.Exhausted = e.RetryCount >= e.MaxRetries
		e.Policy = r.cfg.Policies.For(e.ErrorCode)
		e.Retryable = !e.ErrorCode.Permanent()
		if why := e.ErrorCode.NotRetryableReason(); why != "" {
			e.RetryRefusal = &why
		}
		if a, ok := admission.AssessFailure(e.ErrorCode == domain.ErrorCodeValidation, e.ErrorMessage); ok {
			e.ProcessingStrategy, e.IsProcessable, e.FailureReason = string(a.Strategy), &a.Processable, a.Reason
		}
		if reason.Valid {
			e.Permanent, e.PermanentReason = true, &reason.String
		}
		if permanentAt.Valid {
			e.PermanentAt = &permanentAt.Time
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
