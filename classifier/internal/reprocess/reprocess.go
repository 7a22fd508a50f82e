// Package reprocess sets a source's raw documents back to pending, at low
// priority, so that they are classified again (after a rule change): the
// classifier then publishes again only the documents whose outcome changed.
//
// A request is a task (table reprocess_tasks) run in the background by the
// replica that accepted it: its raw index is read through a point in time
// (rawindex.Store.Scan) and each page of documents is set back to pending
// with "priority": "low" (rawindex.Store.Requeue, through the bounded bulk
// writer), each document only if it is unchanged since it was read
// (if_seq_no/if_primary_term; a conflict is counted and skipped, as
// update_by_query's conflicts=proceed). A document
// being classified (processing) is never read, so never touched; nor is a
// pending one. Progress is written after every page, so GET shows it from
// any replica.
//
// Elasticsearch's update_by_query would need a script or an ingest
// pipeline to change a field, and the minimal distribution this project
// runs has neither; the conditional bulk does the same, page by page.
//
// A task whose replica stops is failed with the reason; one whose replica
// died is reported abandoned once its progress has not moved for
// StaleAfter, which frees its index for a new request. Either way a new
// request finishes the work: the documents already set back are pending,
// so not read again.
package reprocess

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of Config.
const (
	PageSizeDefault      = 500
	MaxConcurrentDefault = 2
	StaleAfterDefault    = 5 * time.Minute
)

// Errors a request can meet.
var (
	// ErrNotFound: no such task, or no such raw index.
	ErrNotFound = errors.New("not found")
	// ErrBusy: this replica runs as many tasks as it may.
	ErrBusy = errors.New("this replica runs as many reprocess tasks as it may")
	// ErrStopped: the runner is not running (not started, or stopping).
	ErrStopped = errors.New("the reprocess runner is not running")
	// ErrNotRunning: Cancel of a task that has ended.
	ErrNotRunning = errors.New("the reprocess task is not running")
)

// RunningError is returned for a request on an index that a task is
// already reprocessing.
type RunningError struct{ TaskID string }

func (e *RunningError) Error() string {
	return "a reprocess of this source is already running: task " + e.TaskID
}

// Scopes of a request: which raw documents are set back to pending.
const (
	// ScopeClassified: the classified documents.
	ScopeClassified = "classified"
	// ScopeAll: every document that is neither pending nor being
	// classified (classified and failed).
	ScopeAll = "all"
)

// Task statuses.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusAbandoned = "abandoned"
	StatusCancelled = "cancelled"
)

// Config configures a Runner.
type Config struct {
	// Raw holds the raw indices. Required.
	Raw *rawindex.Store
	// DB is the classifier's database (reprocess_tasks). Required.
	DB *sql.DB
	// ReplicaID names this replica on its tasks. Required.
	ReplicaID string
	// Logger logs every task's start and end. Required.
	Logger *slog.Logger
	// Metrics, when set, counts the documents set back, skipped and
	// refused (classifier_reprocess_documents_total).
	Metrics *telemetry.Metrics
	// PageSize is the most documents per page (one search, one bulk).
	// Defaults to PageSizeDefault.
	PageSize int
	// MaxConcurrent is the most tasks this replica runs at once. Defaults
	// to MaxConcurrentDefault.
	MaxConcurrent int
	// StaleAfter is how long a running task's progress may stand still
	// before it is taken for abandoned. Defaults to StaleAfterDefault.
	StaleAfter time.Duration
}

// Request is what an operator asks for.
type Request struct {
	// Source is the raw index's prefix; it must be contentindex.ValidSource.
	Source string
	// Scope is ScopeClassified (the default) or ScopeAll.
	Scope string
	// MaxDocs, when positive, bounds the documents set back.
	MaxDocs int
	// By is who asked (the token's subject).
	By string
}

// Task is one request and its progress.
type Task struct {
	ID        string `json:"id"`
	Source    string `json:"source"`
	RawIndex  string `json:"raw_index"`
	Scope     string `json:"scope"`
	MaxDocs   *int   `json:"max_docs"`
	Status    string `json:"status"`
	Scanned   int64  `json:"scanned"`
	Requeued  int64  `json:"requeued"`
	Conflicts int64  `json:"conflicts"`
	Errors    int64  `json:"errors"`
	// Reclassified counts the documents it set back that have been
	// classified again since, and TopicsChanged those of them whose topic
	// set differs from their previous classification's. Both grow after
	// the task ends, as the classifier works through the documents; the
	// committer adds to them (storage.HistoryRepository.InsertBatch).
	Reclassified  int64      `json:"reclassified"`
	TopicsChanged int64      `json:"topics_changed"`
	Error         *string    `json:"error"`
	Replica       string     `json:"replica"`
	RequestedBy   string     `json:"requested_by"`
	StartedAt     time.Time  `json:"started_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	FinishedAt    *time.Time `json:"finished_at"`
	// CancelRequestedBy and CancelRequestedAt are set once an operator
	// asked to cancel the task (Cancel).
	CancelRequestedBy *string    `json:"cancel_requested_by"`
	CancelRequestedAt *time.Time `json:"cancel_requested_at"`
}

// Runner accepts reprocess requests and runs them. It is a lifecycle
// component: Stop cancels the running tasks, which are failed with the
// reason.
type Runner struct {
	cfg  Config
	base lifecycle.Base

	mu      sync.Mutex
	run     context.Context // the run context; nil until started
	running int

	// afterPage, when set (tests), runs after each page is set back and
	// before its progress is written.
	afterPage func(t *Task)
}

// New returns a Runner after checking cfg.
func New(cfg Config) (*Runner, error) {
	cfg.PageSize = config.PositiveOr(cfg.PageSize, PageSizeDefault)
	cfg.MaxConcurrent = config.PositiveOr(cfg.MaxConcurrent, MaxConcurrentDefault)
	cfg.StaleAfter = config.PositiveOr(cfg.StaleAfter, StaleAfterDefault)
	var errs []error
	for _, c := range []struct {
		missing bool
		name    string
	}{{cfg.Raw == nil, "Raw"}, {cfg.DB == nil, "DB"}, {cfg.ReplicaID == "", "ReplicaID"}, {cfg.Logger == nil, "Logger"}} {
		if c.missing {
			errs = append(errs, fmt.Errorf("%s is required", c.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new reprocess runner: %w", err)
	}
	cfg.Logger = cfg.Logger.With("component", "reprocess")
	return &Runner{cfg: cfg}, nil
}

// Start makes the runner accept requests.
func (r *Runner) Start(ctx context.Context) error {
	return r.base.StartFunc(ctx, func(run context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.run = run
		return nil
	})
}

// Stop cancels the running tasks and waits for them, bounded by ctx.
func (r *Runner) Stop(ctx context.Context) error { return r.base.Stop(ctx) }

// taskColumns are the columns scan reads; the last tells, by the
// database's clock, whether a running task has stood still for StaleAfter.
func (r *Runner) taskColumns() string {
	return fmt.Sprintf(`id, source_name, raw_index, scope, max_docs, status, scanned, requeued, conflicts, errors, reclassified, topics_changed, error,
	replica, requested_by, started_at, updated_at, finished_at, cancel_requested_by, cancel_requested_at,
	status = 'running' AND updated_at < NOW() - make_interval(secs => %g)`, r.cfg.StaleAfter.Seconds())
}

// Submit records a request and starts it in the background. It returns
// ErrNotFound when the source has no raw index, a *RunningError when a
// task already reprocesses it, ErrBusy when this replica runs as many
// tasks as it may, and ErrStopped when the runner is not running.
func (r *Runner) Submit(ctx context.Context, req Request) (*Task, error) {
	if req.Scope == "" {
		req.Scope = ScopeClassified
	}
	if req.Scope != ScopeClassified && req.Scope != ScopeAll {
		return nil, fmt.Errorf("submit reprocess: scope must be %q or %q (got %q)", ScopeClassified, ScopeAll, req.Scope)
	}
	if !contentindex.ValidSource(req.Source) {
		return nil, fmt.Errorf("submit reprocess: %q cannot name a source", req.Source)
	}
	index := contentindex.RawIndex(req.Source)
	if err := r.indexExists(ctx, index); err != nil {
		return nil, err
	}
	r.mu.Lock()
	run := r.run
	switch {
	case run == nil || run.Err() != nil:
		r.mu.Unlock()
		return nil, ErrStopped
	case r.running >= r.cfg.MaxConcurrent:
		r.mu.Unlock()
		return nil, ErrBusy
	}
	r.running++
	r.mu.Unlock()
	release := func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}

	task, err := r.insert(ctx, req, index)
	if err != nil {
		release()
		return nil, err
	}
	started := r.base.Go(func() {
		defer release()
		r.execute(run, task)
	})
	if !started {
		release()
		r.finish(context.WithoutCancel(ctx), task, StatusFailed, "the classifier stopped before the task started; request it again")
		return nil, ErrStopped
	}
	r.cfg.Logger.InfoContext(ctx, "reprocess started", "task_id", task.ID, "source", task.Source, "index", index,
		"scope", task.Scope, "max_docs", req.MaxDocs, "by", req.By)
	return task, nil
}

func (r *Runner) indexExists(ctx context.Context, index string) error {
	ok, err := r.cfg.Raw.Exists(ctx, index)
	switch {
	case err != nil:
		return fmt.Errorf("submit reprocess: %w", err)
	case !ok:
		return fmt.Errorf("submit reprocess: raw index %s: %w", index, ErrNotFound)
	}
	return nil
}

// insert records a new running task. A running task of the index whose
// progress has stood still for StaleAfter is marked abandoned first, which
// frees the index.
func (r *Runner) insert(ctx context.Context, req Request, index string) (*Task, error) {
	if _, err := r.cfg.DB.ExecContext(ctx, `
		UPDATE reprocess_tasks SET status = 'abandoned', finished_at = NOW(),
			error = 'its replica stopped reporting progress; request it again to finish'
		WHERE raw_index = $1 AND status = 'running' AND updated_at < NOW() - make_interval(secs => $2)`,
		index, r.cfg.StaleAfter.Seconds()); err != nil {
		return nil, fmt.Errorf("submit reprocess: %w", err)
	}
	var maxDocs sql.NullInt64
	if req.MaxDocs > 0 {
		maxDocs = sql.NullInt64{Int64: int64(req.MaxDocs), Valid: true}
	}
	rows, err := r.cfg.DB.QueryContext(ctx, `
		INSERT INTO reprocess_tasks (source_name, raw_index, scope, max_docs, replica, requested_by)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+r.taskColumns(),
		req.Source, index, req.Scope, maxDocs, r.cfg.ReplicaID, req.By)
	if err != nil {
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && pqErr.Code == "23505" {
			var id string
			if err := r.cfg.DB.QueryRowContext(ctx, `SELECT id FROM reprocess_tasks WHERE raw_index = $1 AND status = 'running'`,
				index).Scan(&id); err != nil {
				return nil, fmt.Errorf("submit reprocess: %w", err)
			}
			return nil, &RunningError{TaskID: id}
		}
		return nil, fmt.Errorf("submit reprocess: %w", err)
	}
	defer rows.Close()
	tasks, err := r.scan(rows)
	if err != nil || len(tasks) != 1 {
		return nil, fmt.Errorf("submit reprocess: %w", errors.Join(err, errors.New("insert returned no task")))
	}
	return &tasks[0], nil
}

// Get returns one task of source.
func (r *Runner) Get(ctx context.Context, source, id string) (*Task, error) {
	rows, err := r.cfg.DB.QueryContext(ctx, `SELECT `+r.taskColumns()+` FROM reprocess_tasks WHERE id = $1::uuid AND source_name = $2`, id, source)
	if err != nil {
		return nil, fmt.Errorf("get reprocess task: %w", err)
	}
	defer rows.Close()
	tasks, err := r.scan(rows)
	if err != nil {
		return nil, fmt.Errorf("get reprocess task: %w", err)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("reprocess task %s of %s: %w", id, source, ErrNotFound)
	}
	return &tasks[0], nil
}

// Cancel asks to cancel a running task of source, by whom, and returns it.
// The replica running the task sees the request after its current page
// and ends the task as cancelled; a task whose replica died (its progress
// stood still for StaleAfter) is cancelled at once. The documents already
// set back to pending stay pending. It answers ErrNotFound for no such
// task and ErrNotRunning for a task that has ended; asking twice is the
// same as asking once.
func (r *Runner) Cancel(ctx context.Context, source, id, by string) (*Task, error) {
	res, err := r.cfg.DB.ExecContext(ctx, `UPDATE reprocess_tasks
		SET cancel_requested_by = COALESCE(cancel_requested_by, $3), cancel_requested_at = COALESCE(cancel_requested_at, NOW()),
		    status = CASE WHEN updated_at < NOW() - make_interval(secs => $4) THEN 'cancelled' ELSE status END,
		    error = CASE WHEN updated_at < NOW() - make_interval(secs => $4)
		                 THEN 'cancelled by an operator after its replica stopped reporting progress' ELSE error END,
		    finished_at = CASE WHEN updated_at < NOW() - make_interval(secs => $4) THEN NOW() ELSE finished_at END
		WHERE id = $1::uuid AND source_name = $2 AND status = 'running'`, id, source, by, r.cfg.StaleAfter.Seconds())
	if err != nil {
		return nil, fmt.Errorf("cancel reprocess task: %w", err)
	}
	changed, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("cancel reprocess task: %w", err)
	}
	t, err := r.Get(ctx, source, id)
	if err != nil {
		return nil, fmt.Errorf("cancel reprocess task: %w", err)
	}
	if changed == 0 {
		return t, fmt.Errorf("cancel reprocess task %s (%s): %w", id, t.Status, ErrNotRunning)
	}
	r.cfg.Logger.InfoContext(ctx, "reprocess cancel requested", "task_id", id, "source", source, "by", by, "status", t.Status)
	return t, nil
}

// Cursor is the position after which List continues: the started_at and
// id of the last task of the previous page.
type Cursor struct {
	StartedAt time.Time
	ID        string
}

// List returns up to limit tasks of source, newest first: the latest, or
// those after the cursor when after is set.
func (r *Runner) List(ctx context.Context, source string, limit int, after *Cursor) ([]Task, error) {
	var at sql.NullTime
	var id sql.NullString
	if after != nil {
		at, id = sql.NullTime{Time: after.StartedAt, Valid: true}, sql.NullString{String: after.ID, Valid: true}
	}
	rows, err := r.cfg.DB.QueryContext(ctx, `SELECT `+r.taskColumns()+` FROM reprocess_tasks WHERE source_name = $1
		AND ($3::timestamptz IS NULL OR (started_at, id) < ($3, $4::uuid))
		ORDER BY started_at DESC, id DESC LIMIT $2`, source, limit, at, id)
	if err != nil {
		return nil, fmt.Errorf("list reprocess tasks: %w", err)
	}
	defer rows.Close()
	tasks, err := r.scan(rows)
	if err != nil {
		return nil, fmt.Errorf("list reprocess tasks: %w", err)
	}
	return tasks, nil
}

// scan reads tasks; a running task whose progress has stood still for
// StaleAfter is reported abandoned.
func (r *Runner) scan(rows *sql.Rows) ([]Task, error) {
	out := []Task{}
	for rows.Next() {
		var t Task
		var maxDocs sql.NullInt64
		var errText sql.NullString
		var finished, cancelAt sql.NullTime
		var cancelBy sql.NullString
		var stale bool
		if err := rows.Scan(&t.ID, &t.Source, &t.RawIndex, &t.Scope, &maxDocs, &t.Status, &t.Scanned, &t.Requeued,
			&t.Conflicts, &t.Errors, &t.Reclassified, &t.TopicsChanged, &errText, &t.Replica, &t.RequestedBy, &t.StartedAt, &t.UpdatedAt, &finished,
			&cancelBy, &cancelAt, &stale); err != nil {
			return nil, err
		}
		if cancelBy.Valid {
			t.CancelRequestedBy = &cancelBy.String
		}
		if cancelAt.Valid {
			t.CancelRequestedAt = &cancelAt.Time
		}
		if maxDocs.Valid {
			n := int(maxDocs.Int64)
			t.MaxDocs = &n
		}
		if errText.Valid {
			t.Error = &errText.String
		}
		if finished.Valid {
			t.FinishedAt = &finished.Time
		}
		if stale {
			t.Status = StatusAbandoned
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// execute runs one task to its end, writing its progress after every page.
func (r *Runner) execute(ctx context.Context, t *Task) {
	statuses := []string{contentindex.StatusClassified}
	if t.Scope == ScopeAll {
		statuses = append(statuses, contentindex.StatusFailed)
	}
	q := rawindex.ScanQuery{
		Indices:  t.RawIndex,
		Statuses: statuses,
		Fields:   []string{"classification_status"},
		PageSize: r.cfg.PageSize,
		Refresh:  true,
	}
	if t.MaxDocs != nil {
		q.PageSize = min(q.PageSize, *t.MaxDocs)
	}
	var firstErr string
	cancelled := false
	err := r.cfg.Raw.Scan(ctx, q, func(ctx context.Context, docs []*domain.RawContent) (bool, error) {
		if t.MaxDocs != nil {
			docs = docs[:min(len(docs), *t.MaxDocs-int(t.Scanned))]
		}
		requeued, conflicts, failed, first, err := r.requeue(ctx, t.ID, docs)
		if err != nil {
			return false, err
		}
		if firstErr == "" {
			firstErr = first
		}
		t.Scanned += int64(len(docs))
		t.Requeued += requeued
		t.Conflicts += conflicts
		t.Errors += failed
		r.count(ctx, t.Source, requeued, conflicts, failed)
		if r.afterPage != nil {
			r.afterPage(t)
		}
		// The progress write also reads whether an operator asked to
		// cancel (Cancel): the task then ends after this page.
		if err := r.cfg.DB.QueryRowContext(ctx, `UPDATE reprocess_tasks SET scanned = $2, requeued = $3, conflicts = $4, errors = $5,
			updated_at = NOW() WHERE id = $1 RETURNING cancel_requested_at IS NOT NULL`, t.ID, t.Scanned, t.Requeued, t.Conflicts, t.Errors).
			Scan(&cancelled); err != nil {
			return false, fmt.Errorf("record progress: %w", err)
		}
		return !cancelled && (t.MaxDocs == nil || t.Scanned < int64(*t.MaxDocs)), nil
	})
	fctx := context.WithoutCancel(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		r.finish(fctx, t, StatusFailed, "the classifier stopped during the task; request it again to finish (documents already set back stay pending)")
	case err != nil:
		r.finish(fctx, t, StatusFailed, err.Error())
	case cancelled:
		r.finish(fctx, t, StatusCancelled, fmt.Sprintf("cancelled by an operator; the %d documents already set back to pending stay pending and are classified again", t.Requeued))
	case t.Errors > 0:
		r.finish(fctx, t, StatusCompleted, fmt.Sprintf("%d documents were refused (first: %s)", t.Errors, firstErr))
	default:
		r.finish(fctx, t, StatusCompleted, "")
	}
}

func (r *Runner) count(ctx context.Context, source string, requeued, conflicts, failed int64) {
	if r.cfg.Metrics == nil {
		return
	}
	for result, n := range map[string]int64{"requeued": requeued, "conflict": conflicts, "error": failed} {
		if n > 0 {
			r.cfg.Metrics.ReprocessDocuments.Add(ctx, n, metric.WithAttributes(attribute.String("source", source), attribute.String("result", result)))
		}
	}
}

// finish records a task's end and logs it. A failure to record it leaves
// the task running until StaleAfter reports it abandoned.
func (r *Runner) finish(ctx context.Context, t *Task, status, reason string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errText sql.NullString
	if reason != "" {
		errText = sql.NullString{String: reason, Valid: true}
	}
	if _, err := r.cfg.DB.ExecContext(ctx, `UPDATE reprocess_tasks SET status = $2, error = $3, scanned = $4, requeued = $5,
		conflicts = $6, errors = $7, updated_at = NOW(), finished_at = NOW() WHERE id = $1`,
		t.ID, status, errText, t.Scanned, t.Requeued, t.Conflicts, t.Errors); err != nil {
		r.cfg.Logger.ErrorContext(ctx, "recording the end of a reprocess task failed; it is reported abandoned once stale",
			"task_id", t.ID, "error", err)
	}
	level := slog.LevelInfo
	if status != StatusCompleted || reason != "" {
		level = slog.LevelWarn
	}
	r.cfg.Logger.Log(ctx, level, "reprocess ended", "task_id", t.ID, "source", t.Source, "status", status,
		"scanned", t.Scanned, "requeued", t.Requeued, "conflicts", t.Conflicts, "errors", t.Errors, "reason", reason)
}

// requeue sets docs back to pending with priority low, stamped with task, each only if it is
// at the version read (rawindex.Store.Requeue). It returns how many were
// set back, skipped because they changed, and refused otherwise, with the
// first refusal.
func (r *Runner) requeue(ctx context.Context, task string, docs []*domain.RawContent) (requeued, conflicts, failed int64, first string, err error) {
	items, err := r.cfg.Raw.Requeue(ctx, docs, task)
	if err != nil {
		return 0, 0, 0, "", fmt.Errorf("reprocess: %w", err)
	}
	for i, it := range items {
		switch {
		case it.Err == nil:
			requeued++
		case rawindex.Changed(it.Err):
			conflicts++
		default:
			failed++
			if first == "" {
				first = fmt.Sprintf("%s/%s: %s", docs[i].Index, docs[i].ID, strings.TrimSpace(it.Err.Error()))
			}
		}
	}
	return requeued, conflicts, failed, first, nil
}
