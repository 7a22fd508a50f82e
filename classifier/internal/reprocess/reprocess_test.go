package reprocess

import (
	"context"
	"database/sql"
	"errors"
	"github.com/north-cloud/classifier/internal/dbtest"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
)

type bundle struct {
	es     *esclient.Client
	prefix string
	db     *sql.DB
}

func setup(t *testing.T) *bundle {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	db, _ := dbtest.Migrated(t)
	return &bundle{es: es, prefix: prefix, db: db}
}

func (b *bundle) runner(t *testing.T, cfg Config) *Runner {
	t.Helper()
	cfg.Raw, cfg.DB, cfg.ReplicaID, cfg.Logger = rawtest.Store(t, b.es), b.db, "replica-1", testenv.Logger(t)
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// classified writes n classified raw documents of source.
func (b *bundle) classified(t *testing.T, source string, n int) string {
	t.Helper()
	docs := make([]contentindex.RawDocument, n)
	for i := range docs {
		docs[i] = rawtest.Doc(source, string(rune('a'+i)), time.Now())
		docs[i].ClassificationStatus = contentindex.StatusClassified
	}
	index := contentindex.RawIndex(source)
	rawtest.Write(t, b.es, index, docs...)
	return index
}

// A document that changed after it was read (a classifier claimed it) is
// left alone and counted as a conflict; the others are set back.
func TestRequeueIsConditionalOnTheVersionRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	index := b.classified(t, b.prefix+"news", 3)
	var read []*domain.RawContent
	if err := rawtest.Store(t, b.es).Scan(context.Background(), rawindex.ScanQuery{Indices: index}, func(_ context.Context, docs []*domain.RawContent) (bool, error) {
		read = append(read, docs...)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	res, err := b.es.Update(index, "b", strings.NewReader(`{"doc":{"classification_status":"processing","claimed_by":"replica-2"}}`),
		b.es.Update.WithRefresh("true"))
	if err := esclient.CheckResponse("claim b", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	requeued, conflicts, failed, _, err := b.runner(t, Config{}).requeue(context.Background(), "task-1", read)
	if err != nil {
		t.Fatal(err)
	}
	if requeued != 2 || conflicts != 1 || failed != 0 {
		t.Fatalf("requeue: %d requeued, %d conflicts, %d refused; want 2, 1, 0", requeued, conflicts, failed)
	}
	if st := rawtest.Statuses(t, b.es, index); st["b"] != contentindex.StatusProcessing || st["a"] != contentindex.StatusPending {
		t.Errorf("statuses = %v, want b still processing and a pending", st)
	}
}

// max_docs bounds the documents set back, across pages.
func TestMaxDocs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	source := b.prefix + "wire"
	index := b.classified(t, source, 5)
	r := b.runner(t, Config{PageSize: 2})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	task, err := r.Submit(context.Background(), Request{Source: source, MaxDocs: 3, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	got := waitDone(t, r, source, task.ID)
	pending := 0
	for _, st := range rawtest.Statuses(t, b.es, index) {
		if st == contentindex.StatusPending {
			pending++
		}
	}
	if got.Status != StatusCompleted || got.Requeued != 3 || got.Scanned != 3 || pending != 3 {
		t.Fatalf("task = %+v with %d pending documents, want completed with 3 set back", got, pending)
	}
}

// waitDone polls a task until it leaves running.
func waitDone(t *testing.T, r *Runner, source, id string) *Task {
	t.Helper()
	var got *Task
	testenv.WaitFor(t, time.Minute, 20*time.Millisecond, "the task to leave running", func() bool {
		var err error
		if got, err = r.Get(context.Background(), source, id); err != nil {
			t.Fatal(err)
		}
		return got.Status != StatusRunning
	})
	return got
}

// Requests are refused before Start and after Stop, for an unknown source
// and for a name that cannot be a source; New names what is missing.
func TestRunnerRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	source := b.prefix + "metro"
	b.classified(t, source, 1)
	r := b.runner(t, Config{})
	ctx := context.Background()
	if _, err := r.Submit(ctx, Request{Source: source}); !errors.Is(err, ErrStopped) {
		t.Errorf("Submit before Start = %v, want ErrStopped", err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(ctx, Request{Source: b.prefix + "nothing"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Submit of a source without an index = %v, want ErrNotFound", err)
	}
	if _, err := r.Submit(ctx, Request{Source: "Not A Source"}); err == nil {
		t.Error("Submit accepted a name that cannot be a source")
	}
	if _, err := r.Submit(ctx, Request{Source: source, Scope: "everything"}); err == nil {
		t.Error("Submit accepted an unknown scope")
	}
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(ctx, Request{Source: source}); !errors.Is(err, ErrStopped) {
		t.Errorf("Submit after Stop = %v, want ErrStopped", err)
	}
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "ReplicaID is required") {
		t.Errorf("New(Config{}) = %v, want the missing fields named", err)
	}
}

// The runner keeps the start/stop contract when Start and Stop race from
// many goroutines.
func TestRunnerStartStopStress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		r, err := New(Config{Raw: rawtest.Store(t, b.es), DB: b.db, ReplicaID: "stress", Logger: testenv.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
}

// An operator cancels a running task: it ends as cancelled after the page
// it was on, the documents of that page stay pending and the rest are not
// touched; cancelling it again is 409's ErrNotRunning, an unknown task
// ErrNotFound. Before, a task could only run to its end.
func TestCancelEndsTheTaskAfterItsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	source := b.prefix + "cancel"
	index := b.classified(t, source, 5)
	r := b.runner(t, Config{PageSize: 1})
	paused, resume := make(chan string, 1), make(chan struct{})
	first := true
	r.afterPage = func(task *Task) {
		if first {
			first = false
			paused <- task.ID
			<-resume
		}
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	task, err := r.Submit(context.Background(), Request{Source: source, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	<-paused // the first page is set back, its progress not yet written
	got, err := r.Cancel(context.Background(), source, task.ID, "ops@example.org")
	if err != nil || got.Status != StatusRunning || got.CancelRequestedBy == nil || *got.CancelRequestedBy != "ops@example.org" || got.CancelRequestedAt == nil {
		t.Fatalf("Cancel = %+v, %v; want running with the request recorded", got, err)
	}
	if again, err := r.Cancel(context.Background(), source, task.ID, "someone else"); err != nil || *again.CancelRequestedBy != "ops@example.org" {
		t.Fatalf("second Cancel while running = %+v, %v; want the first request kept", again, err)
	}
	close(resume)

	done := waitDone(t, r, source, task.ID)
	if done.Status != StatusCancelled || done.Requeued != 1 || done.FinishedAt == nil || done.Error == nil ||
		!strings.Contains(*done.Error, "1 documents already set back to pending stay pending") {
		t.Fatalf("task = %+v, want cancelled after its first page with 1 document set back", done)
	}
	pending := 0
	for _, st := range rawtest.Statuses(t, b.es, index) {
		if st == contentindex.StatusPending {
			pending++
		}
	}
	if pending != 1 {
		t.Errorf("%d documents pending after the cancel, want the first page's 1", pending)
	}
	if _, err := r.Cancel(context.Background(), source, task.ID, "ops"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Cancel of a cancelled task: %v, want ErrNotRunning", err)
	}
	if _, err := r.Cancel(context.Background(), source, "00000000-0000-0000-0000-000000000000", "ops"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Cancel of an unknown task: %v, want ErrNotFound", err)
	}
}

// A running task whose replica died (no progress for StaleAfter) is
// cancelled at once: nothing would ever see the request.
func TestCancelOfAnAbandonedTaskIsImmediate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	source := b.prefix + "orphan"
	r := b.runner(t, Config{StaleAfter: time.Minute})
	var id string
	if err := b.db.QueryRow(`INSERT INTO reprocess_tasks (source_name, raw_index, scope, replica, requested_by, updated_at)
		VALUES ($1, $2, 'classified', 'gone', 'test', NOW() - INTERVAL '1 hour') RETURNING id`,
		source, contentindex.RawIndex(source)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	got, err := r.Cancel(context.Background(), source, id, "ops")
	if err != nil || got.Status != StatusCancelled || got.FinishedAt == nil {
		t.Fatalf("Cancel of an abandoned task = %+v, %v; want cancelled at once", got, err)
	}
}

// reclassify reads the documents of index that a task set back to
// pending, checks they name task, and commits their classification
// history as the committer does: topics[id] is each one's new topic set,
// under claim. The insert is sent twice, as a retried batch would be.
func (b *bundle) reclassify(t *testing.T, index, task, claim string, topics map[string][]string) []*domain.RawContent {
	t.Helper()
	var read []*domain.RawContent
	if err := rawtest.Store(t, b.es).Scan(context.Background(), rawindex.ScanQuery{Indices: index,
		Statuses: []string{contentindex.StatusPending}, Refresh: true}, func(_ context.Context, docs []*domain.RawContent) (bool, error) {
		read = append(read, docs...)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(read) != len(topics) {
		t.Fatalf("%d documents pending, want %d", len(read), len(topics))
	}
	docs := make([]*domain.ClassifiedContent, 0, len(read))
	for _, raw := range read {
		if raw.ReprocessTask != task {
			t.Fatalf("%s names reprocess task %q, want %s", raw.ID, raw.ReprocessTask, task)
		}
		docs = append(docs, &domain.ClassifiedContent{ID: raw.ID, ClaimID: claim, SourceName: raw.SourceName,
			Index: contentindex.ClassifiedIndexFor(index), ContentType: "article", Topics: topics[raw.ID],
			ClassifierVersion: "test", ReprocessTask: raw.ReprocessTask})
	}
	hist := storage.NewHistoryRepository(b.db)
	for range 2 {
		if err := hist.InsertBatch(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
	return read
}

// A run whose documents come out with other topics counts them; a run
// whose documents come out as before counts 0. Each counts only its own
// documents, once however often the batch is written, and the history
// lists both runs newest first, a page at a time.
func TestTopicsChangedAreCountedPerRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	source := b.prefix + "gazette"
	index := b.classified(t, source, 3)
	before := []*domain.ClassifiedContent{}
	for _, id := range []string{"a", "b", "c"} {
		before = append(before, &domain.ClassifiedContent{ID: id, ClaimID: "r@1", SourceName: source,
			Index: contentindex.ClassifiedIndexFor(index), ContentType: "article", Topics: []string{"crime", "local"}, ClassifierVersion: "test"})
	}
	if err := storage.NewHistoryRepository(b.db).InsertBatch(context.Background(), before); err != nil {
		t.Fatal(err)
	}
	r := b.runner(t, Config{})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })

	first, err := r.Submit(context.Background(), Request{Source: source, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, r, source, first.ID)
	// a gains a topic, b loses one, c keeps its set (in another order).
	read := b.reclassify(t, index, first.ID, "r@2", map[string][]string{
		"a": {"crime", "local", "politics"}, "b": {"crime"}, "c": {"local", "crime"}})
	got, err := r.Get(context.Background(), source, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Requeued != 3 || got.Reclassified != 3 || got.TopicsChanged != 2 {
		t.Fatalf("first run: requeued %d, reclassified %d, topics changed %d; want 3, 3, 2", got.Requeued, got.Reclassified, got.TopicsChanged)
	}

	changes := make([]rawindex.Change, len(read))
	for i, raw := range read {
		changes[i] = rawindex.Change{Raw: raw, Status: contentindex.StatusClassified}
	}
	if _, err := rawtest.Store(t, b.es).Flip(context.Background(), changes); err != nil {
		t.Fatal(err)
	}
	second, err := r.Submit(context.Background(), Request{Source: source, By: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, r, source, second.ID)
	b.reclassify(t, index, second.ID, "r@3", map[string][]string{
		"a": {"politics", "crime", "local"}, "b": {"crime"}, "c": {"crime", "local"}})

	tasks, err := r.List(context.Background(), source, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[0].ID != second.ID || tasks[1].ID != first.ID {
		t.Fatalf("history = %+v, want the second run then the first", tasks)
	}
	if s := tasks[0]; s.RequestedBy != "bob" || s.Reclassified != 3 || s.TopicsChanged != 0 || s.FinishedAt == nil {
		t.Errorf("second run = %+v, want bob's, finished, 3 reclassified and 0 topics changed", s)
	}
	if f := tasks[1]; f.RequestedBy != "alice" || f.TopicsChanged != 2 {
		t.Errorf("first run = %+v, want alice's with its 2 topics changed kept", f)
	}
	page, err := r.List(context.Background(), source, 1, &Cursor{StartedAt: tasks[0].StartedAt, ID: tasks[0].ID})
	if err != nil || len(page) != 1 || page[0].ID != first.ID {
		t.Errorf("the page after the second run = %+v, %v; want the first run", page, err)
	}
}
