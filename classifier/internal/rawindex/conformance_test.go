package rawindex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/fault"
	"github.com/north-cloud/infrastructure/testenv"
)

// The conformance suite of the raw-index surface, against the real
// Elasticsearch: every read and write of raw documents goes through a
// rawindex.Store, so what it promises here is what the poller, the
// committer, the dead-letter retries, the sweep and a reprocess rely on.

// bulkGate sits between a client and Elasticsearch. It counts the _bulk
// requests and, when limit is set, answers 413 itself to a _bulk body over
// limit bytes, as a node with a small http.max_content_length would (the
// shared node's limit is 100 MB, too large to reach in a test; its real 413
// is provoked in package storage's TestOversizedBulkIsSplitNotFailed).
type bulkGate struct {
	limit int
	next  http.RoundTripper

	mu       sync.Mutex
	bulks    int
	refused  int
	maxBytes int
}

func (g *bulkGate) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || !strings.HasSuffix(r.URL.Path, "/_bulk") {
		return g.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	g.mu.Lock()
	g.bulks++
	g.maxBytes = max(g.maxBytes, len(body))
	tooLarge := g.limit > 0 && len(body) > g.limit
	if tooLarge {
		g.refused++
	}
	g.mu.Unlock()
	if tooLarge {
		return &http.Response{StatusCode: http.StatusRequestEntityTooLarge, Status: "413 Request Entity Too Large",
			Header: http.Header{"Content-Type": {"text/plain"}, "X-Elastic-Product": {"Elasticsearch"}},
			Body:   io.NopCloser(strings.NewReader("")), Request: r}, nil
	}
	return g.next.RoundTrip(r)
}

func (g *bulkGate) counts() (bulks, refused, maxBytes int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bulks, g.refused, g.maxBytes
}

type suite struct {
	es     *esclient.Client
	prefix string
	store  *rawindex.Store
}

func setup(t *testing.T) suite {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	return suite{es: es, prefix: prefix, store: rawtest.Store(t, es)}
}

// gated returns a store whose requests pass through gate, bounded by
// maxBulkBytes.
func (s suite) gated(t *testing.T, gate *bulkGate, maxBulkBytes int) *rawindex.Store {
	t.Helper()
	gate.next = http.DefaultTransport
	es, err := esclient.NewLazy(esclient.Config{URL: testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch"), Transport: gate})
	if err != nil {
		t.Fatal(err)
	}
	store, err := rawindex.New(rawindex.Config{ES: es, MaxBulkBytes: maxBulkBytes, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// index writes n pending documents named name-NN (crawled a minute apart,
// oldest first) into a new raw index and returns its name.
func (s suite) index(t *testing.T, name string, n int) string {
	t.Helper()
	idx := contentindex.RawIndex(s.prefix + name)
	base := time.Now().Add(-time.Hour)
	docs := make([]contentindex.RawDocument, n)
	for i := range docs {
		docs[i] = rawtest.Doc(name, fmt.Sprintf("%s-%02d", name, i), base.Add(time.Duration(i)*time.Minute))
	}
	rawtest.Write(t, s.es, idx, docs...)
	return idx
}

// pending searches idx for up to 100 pending documents, oldest first.
func (s suite) pending(t *testing.T, store *rawindex.Store, idx string, q rawindex.Pending) []*domain.RawContent {
	t.Helper()
	if q.Size == 0 {
		q.Size = 100
	}
	answers, err := store.SearchPending(context.Background(), []rawindex.Search{{Index: idx, Query: q}})
	if err != nil || len(answers) != 1 || answers[0].Failed() {
		t.Fatalf("search pending %s: %+v, %v", idx, answers, err)
	}
	return answers[0].Docs
}

func ids(docs []*domain.RawContent) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

func flip(docs []*domain.RawContent, status string) []rawindex.Change {
	out := make([]rawindex.Change, len(docs))
	for i, d := range docs {
		out[i] = rawindex.Change{Raw: d, Status: status, Reason: "VALIDATION_ERROR: test"}
	}
	return out
}

// A search for pending documents returns what was written, oldest first,
// each with its index, _id and version, read whole only when asked to
// (WithHTML); Exclude leaves documents out, and a document that is not
// pending or processing is never returned.
func TestSearchPendingReturnsWhatWasWritten(t *testing.T) {
	t.Parallel()
	s := setup(t)
	idx := s.index(t, "search", 4)
	done := rawtest.Doc("search", "done", time.Now())
	done.ClassificationStatus = contentindex.StatusClassified
	legacy := rawtest.Doc("search", "legacy", time.Now())
	legacy.ClassificationStatus = contentindex.StatusProcessing
	rawtest.Write(t, s.es, idx, done, legacy)

	docs := s.pending(t, s.store, idx, rawindex.Pending{})
	if got, want := ids(docs), []string{"search-00", "search-01", "search-02", "search-03", "legacy"}; !slices.Equal(got, want) {
		t.Fatalf("pending = %v, want %v (oldest first, processing counted, classified not)", got, want)
	}
	for _, d := range docs {
		if d.Index != idx || d.PrimaryTerm < 1 || d.SeqNo < 0 || d.Source != nil || d.Title == "" {
			t.Errorf("%s: index %q version %d/%d source %s title %q; want the index, a version, the fields and no whole source",
				d.ID, d.Index, d.SeqNo, d.PrimaryTerm, d.Source, d.Title)
		}
	}
	whole := s.pending(t, s.store, idx, rawindex.Pending{WithHTML: true, Exclude: []string{"search-00", "legacy"}, Size: 2})
	if got := ids(whole); !slices.Equal(got, []string{"search-01", "search-02"}) {
		t.Fatalf("pending without the excluded, two at most = %v", got)
	}
	if whole[0].Source == nil {
		t.Error("a document read whole (WithHTML) does not keep its source for a whole-document flip")
	}
}

// The flip on the version a search returned succeeds once. A second flip
// at that version is refused as ErrChanged, which is the document's news
// (an item the caller leaves alone), not a failure of Elasticsearch that
// would open its breaker; the document keeps the first flip's status.
func TestFlipOnTheVersionReadSucceedsOnce(t *testing.T) {
	t.Parallel()
	s := setup(t)
	idx := s.index(t, "flip", 3)
	for _, withHTML := range []bool{false, true} { // a partial update, then a whole-document index
		docs := s.pending(t, s.store, idx, rawindex.Pending{WithHTML: withHTML, Size: 1})
		if len(docs) != 1 {
			t.Fatalf("withHTML=%t: found %v", withHTML, ids(docs))
		}
		ctx := context.Background()
		res, err := s.store.Flip(ctx, flip(docs, contentindex.StatusClassified))
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("withHTML=%t: first flip = %+v, %v; want it to succeed", withHTML, res, err)
		}
		res, err = s.store.Flip(ctx, flip(docs, contentindex.StatusFailed))
		if err != nil || len(res) != 1 {
			t.Fatalf("withHTML=%t: second flip = %+v, %v; want one item result", withHTML, res, err)
		}
		if e := res[0].Err; !rawindex.Changed(e) || !esclient.IsConflict(e) {
			t.Fatalf("withHTML=%t: second flip on the stale version: %v; want ErrChanged (a 409)", withHTML, e)
		}
		if k := fault.ElasticsearchItem(res[0].Status, res[0].Err.Error()); k == fault.Dependency {
			t.Errorf("withHTML=%t: a changed document is classified as %v, which opens the breaker", withHTML, k)
		}
		if st := rawtest.Statuses(t, s.es, idx)[docs[0].ID]; st != contentindex.StatusClassified {
			t.Errorf("withHTML=%t: %s is %q after the refused flip, want classified", withHTML, docs[0].ID, st)
		}
	}
	// A failed flip records its reason.
	docs := s.pending(t, s.store, idx, rawindex.Pending{Size: 1})
	if res, err := s.store.Flip(context.Background(), flip(docs, contentindex.StatusFailed)); err != nil || res[0].Err != nil {
		t.Fatalf("flip to failed: %+v, %v", res, err)
	}
	var got struct {
		Status string `json:"classification_status"`
		Error  string `json:"classification_error"`
	}
	_ = json.Unmarshal(rawtest.Sources(t, s.es, idx)[docs[0].ID], &got)
	if got.Status != contentindex.StatusFailed || got.Error != "VALIDATION_ERROR: test" {
		t.Errorf("failed document = %+v, want failed with its reason", got)
	}
}

// A requeue resets a classified or failed document to pending at priority
// low, without a claim or an error, on the version a scan read; a document
// that changed since is refused as ErrChanged and left as it is.
func TestRequeueResetsToPending(t *testing.T) {
	t.Parallel()
	s := setup(t)
	idx := s.index(t, "requeue", 3)
	ctx := context.Background()
	docs := s.pending(t, s.store, idx, rawindex.Pending{})
	if res, err := s.store.Flip(ctx, flip(docs, contentindex.StatusFailed)); err != nil || res[2].Err != nil {
		t.Fatalf("flip: %+v, %v", res, err)
	}
	var read []*domain.RawContent
	err := s.store.Scan(ctx, rawindex.ScanQuery{Indices: idx, Statuses: []string{contentindex.StatusFailed}, Refresh: true},
		func(_ context.Context, page []*domain.RawContent) (bool, error) {
			read = append(read, page...)
			return true, nil
		})
	if err != nil || len(read) != 3 {
		t.Fatalf("scan read %d, %v; want the 3 failed", len(read), err)
	}
	// requeue-02 changes after the scan: a crawler rewrites it.
	rawtest.Write(t, s.es, idx, rawtest.Doc("requeue", "requeue-02", time.Now()))

	requeuedAt := time.Now().Add(-time.Second)
	const task = "6f1c2d3e-0000-4000-8000-000000000001"
	res, err := s.store.Requeue(ctx, read, task)
	if err != nil || len(res) != 3 {
		t.Fatalf("requeue = %+v, %v", res, err)
	}
	for i, r := range res {
		changed := read[i].ID == "requeue-02"
		if rawindex.Changed(r.Err) != changed || (!changed && r.Err != nil) {
			t.Errorf("requeue of %s: %v; want changed=%t", read[i].ID, r.Err, changed)
		}
	}
	sources := rawtest.Sources(t, s.es, idx)
	for _, id := range []string{"requeue-00", "requeue-01"} {
		var d map[string]any
		_ = json.Unmarshal(sources[id], &d)
		if d["classification_status"] != contentindex.StatusPending || d["priority"] != contentindex.PriorityLow ||
			d["classification_error"] != nil || d["claimed_by"] != nil {
			t.Errorf("%s after requeue = %v; want pending, low, no error, no claim", id, d)
		}
		// The task that set it back is named, for its topics-changed count.
		if d["reprocess_task"] != task {
			t.Errorf("%s reprocess_task = %v, want %s", id, d["reprocess_task"], task)
		}
		// Its wait counts from the requeue (the poller lag), not its crawl.
		since, _ := d["pending_since"].(string)
		if at, err := time.Parse(time.RFC3339Nano, since); err != nil || at.Before(requeuedAt) {
			t.Errorf("%s pending_since = %q, want the time of the requeue (after %s)", id, since, requeuedAt.UTC())
		}
	}
	if got := s.pending(t, s.store, idx, rawindex.Pending{}); len(got) != 3 {
		t.Errorf("pending after the requeue = %v, want all 3", ids(got))
	}
}

// Every write is bounded by the configured byte bound: a flip larger than
// it is sent as several requests, each within the bound, and every
// document is written.
func TestBulkOverTheByteBoundIsSplit(t *testing.T) {
	t.Parallel()
	s := setup(t)
	idx := s.index(t, "bound", 20)
	gate := &bulkGate{}
	store := s.gated(t, gate, 2048)
	docs := s.pending(t, store, idx, rawindex.Pending{WithHTML: true}) // whole documents: ~500 bytes a line
	res, err := store.Flip(context.Background(), flip(docs, contentindex.StatusClassified))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", docs[i].ID, r.Err)
		}
	}
	bulks, _, maxBytes := gate.counts()
	if bulks < 4 || maxBytes > 2048 {
		t.Errorf("%d bulk requests of at most %d bytes; want several within the 2048-byte bound", bulks, maxBytes)
	}
	for id, st := range rawtest.Statuses(t, s.es, idx) {
		if st != contentindex.StatusClassified {
			t.Errorf("%s is %q, want classified", id, st)
		}
	}
}

// A request Elasticsearch refuses as too large (413) is split in halves
// and sent again until it passes; a single document still refused gets a
// 413 item result of its own, and the others are written.
func TestTooLargeRequestIsSplitAndRetried(t *testing.T) {
	t.Parallel()
	s := setup(t)
	idx := s.index(t, "split", 8)
	big := rawtest.Doc("split", "split-big", time.Now().Add(-2*time.Hour))
	big.RawText = strings.Repeat("long text ", 400)
	rawtest.Write(t, s.es, idx, big)
	gate := &bulkGate{limit: 2500}
	store := s.gated(t, gate, 1<<20) // the byte bound does not split: only the 413 does
	docs := s.pending(t, store, idx, rawindex.Pending{WithHTML: true})
	if len(docs) != 9 || docs[0].ID != "split-big" {
		t.Fatalf("found %v", ids(docs))
	}
	res, err := store.Flip(context.Background(), flip(docs, contentindex.StatusClassified))
	if err != nil {
		t.Fatalf("flip: %v; want item results, not a failed request", err)
	}
	if res[0].Status != http.StatusRequestEntityTooLarge || res[0].Err == nil || rawindex.Changed(res[0].Err) {
		t.Errorf("the document too large alone: %+v; want a 413 item result", res[0])
	}
	for i, r := range res[1:] {
		if r.Err != nil {
			t.Errorf("%s: %v; want it written", docs[i+1].ID, r.Err)
		}
	}
	if bulks, refused, _ := gate.counts(); refused < 2 || bulks <= refused {
		t.Errorf("%d bulk requests, %d refused as too large; want refusals split and retried", bulks, refused)
	}
	statuses := rawtest.Statuses(t, s.es, idx)
	if statuses["split-big"] != contentindex.StatusPending || statuses["split-00"] != contentindex.StatusClassified {
		t.Errorf("statuses = %v; want the refused document pending, the others classified", statuses)
	}
}

// Ids are whatever the crawler wrote: NUL bytes, slashes, spaces,
// percent signs, quotes and non-ASCII letters are read, got by id and
// flipped like any other.
func TestOddIdsRoundTrip(t *testing.T) {
	t.Parallel()
	s := setup(t)
	idx := contentindex.RawIndex(s.prefix + "odd")
	odd := []string{"nul\x00byte", "a/b/c", "with space", "100%25?x=1&y", `quote"d`, "ünïcødé-文字"}
	now := time.Now()
	docs := make([]contentindex.RawDocument, len(odd))
	for i, id := range odd {
		docs[i] = rawtest.Doc("odd", id, now.Add(time.Duration(i)*time.Second))
	}
	rawtest.Write(t, s.es, idx, docs...)
	found := s.pending(t, s.store, idx, rawindex.Pending{WithHTML: true})
	if got := ids(found); !slices.Equal(got, odd) {
		t.Fatalf("search = %q, want %q", got, odd)
	}
	refs := make([]domain.DocKey, len(odd))
	for i, id := range odd {
		refs[i] = domain.DocKey{Index: idx, ID: id}
	}
	got, missing, err := s.store.Get(context.Background(), refs)
	if err != nil || len(missing) != 0 || !slices.Equal(ids(got), odd) {
		t.Fatalf("get = %q, missing %v, %v", ids(got), missing, err)
	}
	res, err := s.store.Flip(context.Background(), flip(got, contentindex.StatusClassified))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Errorf("flip of %q: %v", odd[i], r.Err)
		}
	}
	for id, st := range rawtest.Statuses(t, s.es, idx) {
		if st != contentindex.StatusClassified {
			t.Errorf("%q is %q, want classified", id, st)
		}
	}
}

// A raw index that does not exist (deleted, never created) is no error of
// a read: a search finds nothing, a get reports the documents missing, a
// scan reads nothing. A write to it is refused for that document alone
// (document missing), and not as a change of the document.
func TestMissingIndex(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	gone := contentindex.RawIndex(s.prefix + "gone")
	if ok, err := s.store.Exists(ctx, gone); ok || err != nil {
		t.Fatalf("exists = %t, %v; want false", ok, err)
	}
	if docs := s.pending(t, s.store, gone, rawindex.Pending{}); len(docs) != 0 {
		t.Errorf("search of a missing index = %v", ids(docs))
	}
	found, missing, err := s.store.Get(ctx, []domain.DocKey{{Index: gone, ID: "x"}})
	if err != nil || len(found) != 0 || len(missing) != 1 {
		t.Errorf("get from a missing index = %v, missing %v, %v; want it missing", ids(found), missing, err)
	}
	calls := 0
	if err := s.store.Scan(ctx, rawindex.ScanQuery{Indices: gone, Refresh: true},
		func(context.Context, []*domain.RawContent) (bool, error) { calls++; return true, nil }); err != nil || calls != 0 {
		t.Errorf("scan of a missing index: %d pages, %v", calls, err)
	}
	doc := &domain.RawContent{Index: gone, SeqNo: 0, PrimaryTerm: 1}
	doc.ID = "x"
	res, err := s.store.Flip(ctx, []rawindex.Change{{Raw: doc, Status: contentindex.StatusClassified}})
	if err != nil || len(res) != 1 || res[0].Err == nil || rawindex.Changed(res[0].Err) {
		t.Errorf("flip in a missing index = %+v, %v; want an item refusal that is not ErrChanged", res, err)
	}
	// Elasticsearch's bulk update creates the missing index
	// (action.auto_create_index) before it refuses the document: the
	// index is empty, and the raw index template gives it its mapping.
}

// The typed queries render to searches Elasticsearch runs as the poller
// means them: the fresh lane ranks by level before recency, an urgent-only
// lane finds only the urgent, and Levels/NotLevels filter on priority.
func TestRankedAndUrgentQueries(t *testing.T) {
	t.Parallel()
	s := setup(t)
	idx := contentindex.RawIndex(s.prefix + "rank")
	now := time.Now()
	doc := func(id, level string, age time.Duration) contentindex.RawDocument {
		d := rawtest.Doc("rank", id, now.Add(-age))
		d.Priority = level
		return d
	}
	rawtest.Write(t, s.es, idx, doc("old-critical", contentindex.PriorityCritical, 72*time.Hour),
		doc("fresh-low", contentindex.PriorityLow, time.Minute), doc("fresh", "", 2*time.Minute),
		doc("old", "", 48*time.Hour))
	rank := &rawindex.Rank{Origin: now, Scale: time.Hour, Floor: 0.001, Substantive: rawindex.Substantive{Words: 150, Weight: 1.2},
		Levels: []rawindex.LevelWeight{{Level: contentindex.PriorityCritical, Weight: 1e8}, {Level: contentindex.PriorityLow, Weight: 1e-4}}}
	if got := ids(s.pending(t, s.store, idx, rawindex.Pending{Rank: rank})); !slices.Equal(got, []string{"old-critical", "fresh", "old", "fresh-low"}) {
		t.Errorf("ranked = %v; want critical first, low last", got)
	}
	urgent := rawindex.Pending{Urgent: &rawindex.Urgent{Since: now.Add(-time.Hour)},
		NotLevels: []string{contentindex.PriorityLow, contentindex.PriorityCleanup}, Rank: rank}
	if got := ids(s.pending(t, s.store, idx, urgent)); !slices.Equal(got, []string{"old-critical", "fresh"}) {
		t.Errorf("urgent = %v; want the critical and the fresh, not the low", got)
	}
	if got := ids(s.pending(t, s.store, idx, rawindex.Pending{Levels: []string{contentindex.PriorityLow}})); !slices.Equal(got, []string{"fresh-low"}) {
		t.Errorf("levels low = %v", got)
	}
	if got := ids(s.pending(t, s.store, idx, rawindex.Pending{Urgent: &rawindex.Urgent{Since: now, Unmarked: true}})); !slices.Equal(got, []string{"old-critical", "old", "fresh"}) {
		t.Errorf("urgent with unmarked = %v; want the critical and those naming no level, oldest first", got)
	}
}
