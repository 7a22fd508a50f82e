package opsapi

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/reprocess"
	"github.com/north-cloud/classifier/internal/sourcepriority"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// sourcesBundle serves the API with a running reprocess runner and the
// priority store, over the test's Elasticsearch indices.
type sourcesBundle struct {
	*bundle
	es         *esclient.Client
	prefix     string
	priorities *sourcepriority.Store
}

func setupSources(t *testing.T) *sourcesBundle {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	sb := &sourcesBundle{es: es, prefix: prefix}
	sb.bundle = setupWith(t, func(db *sql.DB, d *Deps) {
		runner, err := reprocess.New(reprocess.Config{Raw: rawtest.Store(t, es), DB: db, ReplicaID: "replica-1", Logger: testenv.Logger(t), PageSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := runner.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := runner.Stop(ctx); err != nil {
				t.Error(err)
			}
		})
		priorities, err := sourcepriority.New(sourcepriority.Config{DB: db, Raw: rawtest.Store(t, es), MaxLowMarks: 3})
		if err != nil {
			t.Fatal(err)
		}
		sb.priorities = priorities
		d.Reprocess, d.Priorities = runner, sb.priorities
	})
	return sb
}

// waitTask polls a task until it leaves running (its goroutine works in the
// background) and returns it.
func (b *sourcesBundle) waitTask(t *testing.T, source, id string) reprocess.Task {
	t.Helper()
	var task reprocess.Task
	testenv.WaitFor(t, time.Minute, 50*time.Millisecond, "task "+id+" to leave running", func() bool {
		task = reprocess.Task{}
		if code := b.do(t, "GET", "/api/v1/sources/"+source+"/reprocess/"+id, nil, &task); code != 200 {
			t.Fatalf("GET task = %d", code)
		}
		return task.Status != reprocess.StatusRunning
	})
	return task
}

// A reprocess request sets the source's classified documents back to
// pending with priority low, in the background, and leaves pending,
// failed and claimed (processing) documents alone; scope "all" takes the
// failed ones too. Each answer is checked against the OpenAPI document.
func TestReprocessSource(t *testing.T) {
	t.Parallel()
	b := setupSources(t)
	source := b.prefix + "news"
	index := contentindex.RawIndex(source)
	var docs []contentindex.RawDocument
	for i, st := range []string{"classified", "classified", "classified", "classified", "classified", "failed", "pending", "processing"} {
		d := rawtest.Doc(source, string(rune('a'+i)), time.Now())
		d.ClassificationStatus = st
		if st == contentindex.StatusProcessing {
			d.ClaimedBy = "replica-2"
		}
		if st == contentindex.StatusFailed {
			d.ClassificationError = "VALIDATION_ERROR: url: missing"
		}
		docs = append(docs, d)
	}
	rawtest.Write(t, b.es, index, docs...)

	var task reprocess.Task
	if code := b.do(t, "POST", "/api/v1/sources/"+source+"/reprocess", nil, &task); code != 202 {
		t.Fatalf("POST reprocess = %d", code)
	}
	if task.Scope != reprocess.ScopeClassified || task.RawIndex != index || task.RequestedBy != "operator@example.org" {
		t.Errorf("task = %+v", task)
	}
	done := b.waitTask(t, source, task.ID)
	if done.Status != reprocess.StatusCompleted || done.Requeued != 5 || done.Scanned != 5 || done.Conflicts != 0 || done.FinishedAt == nil {
		t.Fatalf("finished task = %+v, want completed with 5 requeued", done)
	}
	// A task that has ended cannot be cancelled (409); an unknown one is 404.
	if code, body := b.doRaw(t, "POST", "/api/v1/sources/"+source+"/reprocess/"+task.ID+"/cancel", ""); code != 409 || body != "conflict" {
		t.Errorf("cancel of a completed task = %d %s, want 409", code, body)
	}
	if code, _ := b.doRaw(t, "POST", "/api/v1/sources/"+source+"/reprocess/00000000-0000-0000-0000-000000000000/cancel", ""); code != 404 {
		t.Errorf("cancel of an unknown task = %d, want 404", code)
	}
	sources := rawtest.Sources(t, b.es, index)
	for id, src := range sources {
		var d contentindex.RawDocument
		if err := json.Unmarshal(src, &d); err != nil {
			t.Fatal(err)
		}
		switch id {
		case "a", "b", "c", "d", "e":
			if d.ClassificationStatus != contentindex.StatusPending || d.Priority != contentindex.PriorityLow {
				t.Errorf("%s = %s priority %q, want pending and low", id, d.ClassificationStatus, d.Priority)
			}
		case "f":
			if d.ClassificationStatus != contentindex.StatusFailed || d.ClassificationError == "" {
				t.Errorf("failed document changed by scope classified: %+v", d)
			}
		case "g":
			if d.Priority != "" {
				t.Errorf("a pending document was touched: %+v", d)
			}
		case "h":
			if d.ClassificationStatus != contentindex.StatusProcessing || d.ClaimedBy != "replica-2" || d.Priority != "" {
				t.Errorf("a claimed document was touched: %+v", d)
			}
		}
	}

	if code := b.do(t, "POST", "/api/v1/sources/"+source+"/reprocess", map[string]any{"scope": "all", "max_docs": 10}, &task); code != 202 {
		t.Fatalf("POST reprocess scope all = %d", code)
	}
	if done := b.waitTask(t, source, task.ID); done.Requeued != 1 || done.MaxDocs == nil || *done.MaxDocs != 10 {
		t.Fatalf("scope all = %+v, want the failed document requeued", done)
	}
	if st := rawtest.Statuses(t, b.es, index); st["f"] != contentindex.StatusPending || st["h"] != contentindex.StatusProcessing {
		t.Errorf("after scope all: f %q, h %q; want pending and still processing", st["f"], st["h"])
	}
	var list struct {
		Tasks      []reprocess.Task `json:"tasks"`
		NextCursor *string          `json:"next_cursor"`
	}
	if code := b.do(t, "GET", "/api/v1/sources/"+source+"/reprocess", nil, &list); code != 200 || len(list.Tasks) != 2 || list.Tasks[0].ID != task.ID ||
		list.NextCursor != nil {
		t.Errorf("task list = %d %+v, want both, newest first, and no next page", code, list.Tasks)
	}
	// A page at a time: the next page holds the older run, and ends the list.
	first := list.Tasks[1].ID
	if code := b.do(t, "GET", "/api/v1/sources/"+source+"/reprocess?limit=1", nil, &list); code != 200 || len(list.Tasks) != 1 ||
		list.Tasks[0].ID != task.ID || list.NextCursor == nil {
		t.Fatalf("first page = %d %+v, want the newest run and a cursor", code, list)
	}
	if code := b.do(t, "GET", "/api/v1/sources/"+source+"/reprocess?limit=1&cursor="+*list.NextCursor, nil, &list); code != 200 ||
		len(list.Tasks) != 1 || list.Tasks[0].ID != first || list.NextCursor != nil {
		t.Errorf("second page = %d %+v, want the older run and no cursor", code, list)
	}
}

// While a task of the source runs, another request is refused (409 naming
// it); a task whose replica stopped reporting is reported abandoned and no
// longer blocks a new request. Bad input is 400, an unknown source 404.
func TestReprocessConflictsAndInput(t *testing.T) {
	t.Parallel()
	b := setupSources(t)
	source := b.prefix + "wire"
	rawtest.Write(t, b.es, contentindex.RawIndex(source), rawtest.Doc(source, "x", time.Now()))
	var id string
	if err := b.db.QueryRow(`INSERT INTO reprocess_tasks (source_name, raw_index, scope, replica) VALUES ($1, $2, 'classified', 'replica-9') RETURNING id`,
		source, contentindex.RawIndex(source)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	code, ec := b.doRaw(t, "POST", "/api/v1/sources/"+source+"/reprocess", "{}")
	if code != 409 || ec != "conflict" {
		t.Fatalf("POST while a task runs = %d %s, want 409 conflict", code, ec)
	}
	if _, err := b.db.Exec(`UPDATE reprocess_tasks SET updated_at = NOW() - INTERVAL '1 hour' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var stale reprocess.Task
	if b.do(t, "GET", "/api/v1/sources/"+source+"/reprocess/"+id, nil, &stale); stale.Status != reprocess.StatusAbandoned {
		t.Errorf("stale task = %+v, want abandoned", stale)
	}
	var task reprocess.Task
	if code := b.do(t, "POST", "/api/v1/sources/"+source+"/reprocess", map[string]any{}, &task); code != 202 {
		t.Fatalf("POST after the stale task = %d, want 202", code)
	}
	b.waitTask(t, source, task.ID)
	var old reprocess.Task
	if b.do(t, "GET", "/api/v1/sources/"+source+"/reprocess/"+id, nil, &old); old.Status != reprocess.StatusAbandoned || old.Error == nil {
		t.Errorf("the stale task = %+v, want abandoned with a reason", old)
	}

	for _, tt := range []struct{ method, path, body, code string }{
		{"POST", "/api/v1/sources/Bad%20Name/reprocess", "{}", "bad_request"},
		{"POST", "/api/v1/sources/" + source + "/reprocess", `{"scope":"everything"}`, "bad_request"},
		{"POST", "/api/v1/sources/" + source + "/reprocess", `{"max_docs":0}`, "bad_request"},
		{"POST", "/api/v1/sources/" + source + "/reprocess", `{"scoop":"all"}`, "invalid_json"},
		{"GET", "/api/v1/sources/" + source + "/reprocess/not-a-uuid", "", "bad_request"},
		{"GET", "/api/v1/sources/" + source + "/reprocess?limit=0", "", "bad_request"},
		{"GET", "/api/v1/sources/" + source + "/reprocess?limit=101", "", "bad_request"},
		{"PUT", "/api/v1/sources/" + source + "/priority", `{"priority":"urgent"}`, "bad_request"},
		{"PUT", "/api/v1/sources/" + source + "/priority", `{"priority":"low","why":"x"}`, "invalid_json"},
		{"PUT", "/api/v1/sources/%00/priority", `{"priority":"low"}`, "invalid_text"},
	} {
		if code, ec := b.doRaw(t, tt.method, tt.path, tt.body); code != 400 || ec != tt.code {
			t.Errorf("%s %s %s = %d %s, want 400 %s", tt.method, tt.path, tt.body, code, ec, tt.code)
		}
	}
	if code, ec := b.doRaw(t, "POST", "/api/v1/sources/"+b.prefix+"nothing/reprocess", ""); code != 404 || ec != "not_found" {
		t.Errorf("POST reprocess of a source without a raw index = %d %s, want 404", code, ec)
	}
	if code, _ := b.doRaw(t, "GET", "/api/v1/sources/"+source+"/reprocess/00000000-0000-0000-0000-000000000000", ""); code != 404 {
		t.Errorf("GET an unknown task = %d, want 404", code)
	}
}

// Priorities: normal until marked; PUT marks low and back; List gives the
// poller every mark. Sources named like the fixed routes ("stats",
// "poll-status") are reached below /sources/{name}/, and the fixed routes
// still answer.
func TestSourcePriorityAndRouteShadowing(t *testing.T) {
	t.Parallel()
	b := setupSources(t)
	// Sources with classified documents (no raw index needed).
	for _, name := range []string{"news", "stats", "poll-status"} {
		if _, err := b.db.Exec(`INSERT INTO source_reputation (source_name) VALUES ($1)`, name); err != nil {
			t.Fatal(err)
		}
	}
	var m sourcepriority.Mark
	if code := b.do(t, "GET", "/api/v1/sources/news/priority", nil, &m); code != 200 || m.Priority != sourcepriority.Normal || m.UpdatedAt != nil {
		t.Fatalf("unmarked = %d %+v, want normal with no updated_at", code, m)
	}
	if code := b.do(t, "PUT", "/api/v1/sources/news/priority", map[string]string{"priority": "low"}, &m); code != 200 ||
		m.Priority != sourcepriority.Low || m.UpdatedBy != "operator@example.org" || m.UpdatedAt == nil {
		t.Fatalf("PUT low = %d %+v", code, m)
	}
	// The five levels of the queue hygiene rules (before: low and normal only).
	for _, level := range []sourcepriority.Priority{sourcepriority.Critical, sourcepriority.High, sourcepriority.Cleanup, sourcepriority.Low} {
		if code := b.do(t, "PUT", "/api/v1/sources/news/priority", map[string]string{"priority": string(level)}, &m); code != 200 || m.Priority != level {
			t.Fatalf("PUT %s = %d %+v", level, code, m)
		}
	}
	for _, name := range []string{"stats", "poll-status"} {
		if code := b.do(t, "PUT", "/api/v1/sources/"+name+"/priority", map[string]string{"priority": "low"}, &m); code != 200 || m.Source != name {
			t.Errorf("PUT /sources/%s/priority = %d %+v, want the mark of source %q", name, code, m, name)
		}
		if code := b.do(t, "GET", "/api/v1/sources/"+name+"/priority", nil, &m); code != 200 || m.Source != name || m.Priority != sourcepriority.Low {
			t.Errorf("GET /sources/%s/priority = %d %+v", name, code, m)
		}
		code, _ := b.doRaw(t, "POST", "/api/v1/sources/"+name+"/reprocess", "")
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		b.do(t, "POST", "/api/v1/sources/"+name+"/reprocess", nil, &e)
		if code != 404 || !strings.Contains(e.Error.Message, name+"_raw_content") {
			t.Errorf("POST /sources/%s/reprocess = %d %q, want the reprocess route's 404 naming its raw index", name, code, e.Error.Message)
		}
	}
	if code := b.do(t, "PUT", "/api/v1/sources/poll-status/priority", map[string]string{"priority": "normal"}, &m); code != 200 || m.Priority != sourcepriority.Normal {
		t.Errorf("PUT normal = %d %+v", code, m)
	}
	marks, err := b.priorities.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 3 || marks["news"] != sourcepriority.Low || marks["stats"] != sourcepriority.Low || marks["poll-status"] != sourcepriority.Normal {
		t.Errorf("List = %v", marks)
	}
	// A source with neither a raw index nor classified documents has no
	// mark (before: 200, and every low mark grew every poll's search); a
	// raw index is enough; past the bound (3 in this test) a new low mark
	// is refused.
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if code := b.do(t, "PUT", "/api/v1/sources/zz-no-such-source/priority", map[string]string{"priority": "low"}, &e); code != 404 ||
		e.Error.Code != "not_found" || !strings.Contains(e.Error.Message, "zz-no-such-source_raw_content") {
		t.Errorf("PUT priority of a source that does not exist = %d %+v, want 404 naming its raw index", code, e)
	}
	if code, _ := b.doRaw(t, "GET", "/api/v1/sources/zz-no-such-source/priority", ""); code != 200 {
		t.Errorf("GET priority of an unmarked source = %d, want 200 (normal)", code)
	}
	for _, src := range []string{"one", "two"} {
		if err := contentindex.CreateIndex(context.Background(), b.es, contentindex.RawIndex(b.prefix+src)); err != nil {
			t.Fatal(err)
		}
	}
	if code := b.do(t, "PUT", "/api/v1/sources/"+b.prefix+"one/priority", map[string]string{"priority": "low"}, &m); code != 200 {
		t.Errorf("PUT low on a source with a raw index = %d %+v", code, m)
	}
	if code := b.do(t, "PUT", "/api/v1/sources/"+b.prefix+"two/priority", map[string]string{"priority": "low"}, &e); code != 409 ||
		e.Error.Code != "conflict" || !strings.Contains(e.Error.Message, "at most 3") {
		t.Errorf("PUT a fourth low mark = %d %+v, want 409 naming the bound", code, e)
	}
	// The fixed routes are still theirs.
	if code, ec := b.doRaw(t, "GET", "/api/v1/sources/poll-status", ""); code != 503 || ec != "unavailable" {
		t.Errorf("GET /sources/poll-status = %d %s, want the poll status route (503 without a poller)", code, ec)
	}
	if code, ec := b.doRaw(t, "GET", "/api/v1/sources/stats", ""); code != 503 || ec != "unavailable" {
		t.Errorf("GET /sources/stats = %d %s, want the statistics route (503 without a reader)", code, ec)
	}
}
