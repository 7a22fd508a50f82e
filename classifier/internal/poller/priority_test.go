package poller

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// Fresh documents are claimed before an old backlog, the oldest documents
// still get their share, and a low-priority document (a backfill) or one
// of a source marked low waits behind every normal one.
func TestFreshFirstWithoutStarvingTheBacklog(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idx := h.rawIndex(t, "news", false)
	old := h.addDocs(t, idx, "old", 40, time.Now().Add(-72*time.Hour)) // oldest first
	fresh := h.addDocs(t, idx, "fresh", 5, time.Now().Add(-10*time.Minute))
	// Crawled now but low priority: a reprocess run.
	var body bytes.Buffer
	meta, _ := json.Marshal(map[string]any{"index": map[string]any{"_index": idx, "_id": "low-00"}})
	doc, _ := json.Marshal(map[string]any{"id": "low-00", "url": "https://example.org/low", "source_name": "news",
		"title": "t", "raw_text": "x", "crawled_at": time.Now().UTC().Format(time.RFC3339),
		"classification_status": contentindex.StatusPending, "priority": contentindex.PriorityLow})
	body.Write(meta)
	body.WriteByte('\n')
	body.Write(doc)
	body.WriteByte('\n')
	h.bulk(t, &body)

	p := h.poller(t, Config{BatchSize: 10, PollInterval: time.Second, BacklogShare: 0.2})
	if _, err := p.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := h.sink.keys()
	if len(got) != 10 {
		t.Fatalf("first poll submitted %d documents, want 10: %v", len(got), got)
	}
	for _, k := range fresh {
		if !slices.Contains(got, k) {
			t.Errorf("fresh %s not in the first batch %v", k, got)
		}
	}
	for _, k := range old[:2] { // the backlog lane: 20% of 10, oldest first
		if !slices.Contains(got, k) {
			t.Errorf("oldest %s not in the first batch %v: the backlog starves", k, got)
		}
	}
	if slices.Contains(got, idx+"/low-00") {
		t.Errorf("the low-priority document came before normal ones: %v", got)
	}
}

func TestLaneSizes(t *testing.T) {
	c := Config{BacklogShare: 0.2}
	for _, tc := range []struct{ share, fresh, backlog int }{{100, 80, 20}, {10, 8, 2}, {4, 3, 1}, {2, 1, 1}} {
		if f, b := c.lanes(tc.share, 1); f != tc.fresh || b != tc.backlog {
			t.Errorf("lanes(%d) = %d, %d; want %d, %d", tc.share, f, b, tc.fresh, tc.backlog)
		}
	}
	backlogPolls := 0
	for n := range uint64(10) {
		if _, b := c.lanes(1, n); b == 1 {
			backlogPolls++
		}
	}
	if backlogPolls != 2 {
		t.Errorf("with a share of one, %d of 10 polls went to the backlog, want 2", backlogPolls)
	}
	if f, b := (&Config{}).lanes(10, 1); f != 0 || b != 10 {
		t.Errorf("no priorities (share 0): %d, %d; want all oldest first", f, b)
	}
}

// With the main work queue full of backlog, fresh documents are still
// claimed, for the urgent queue, and nothing else is.
func TestUrgentDocumentsPassAFullQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idx := h.rawIndex(t, "wire", false)
	h.addDocs(t, idx, "old", 30, time.Now().Add(-72*time.Hour))
	fresh := h.addDocs(t, idx, "fresh", 2, time.Now().Add(-time.Minute))
	template := h.poller(t, Config{}) // for its metrics
	urgent := &collectSink{}
	p, err := New(Config{ReplicaID: "r", IndexPattern: idx, BatchSize: 10, PollInterval: time.Second, Urgent: urgent, Leases: h.leases(t, "r"), Raw: rawStore(t, h.es)},
		fullSink{throttle: true}, template.metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := urgent.keys(); !slices.Equal(got, fresh) {
		t.Fatalf("urgent queue got %v, want only the fresh documents %v", got, fresh)
	}
	// Nothing old was claimed: it would be stuck behind the full queue.
	for _, k := range h.sink.keys() {
		t.Errorf("the full main queue was given %s", k)
	}
}

// A source marked low is read per raw index, never sent as a list of
// sources (before, every low mark of every source went into a terms filter
// of every index's fresh lane, so past index.max_terms_count every search
// failed). The low index is searched in its backlog lane only: its
// documents, fresh as they are, come after every normal index's and never
// go to the urgent queue; with nothing else pending it takes the whole
// batch.
func TestLowSourceGetsTheBacklogShareOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	news := h.rawIndex(t, "news", false)
	backfill := h.rawIndex(t, "backfill", false)
	h.addDocs(t, news, "n", 20, time.Now().Add(-30*time.Minute))
	low := h.addDocs(t, backfill, "b", 20, time.Now().Add(-20*time.Minute)) // fresher than news
	lowSource := markedLow(h.prefix + "backfill")
	urgent := &collectSink{}
	p := h.poller(t, Config{BatchSize: 10, PollInterval: time.Second, BacklogShare: 0.2, SourcePriority: lowSource, Urgent: urgent, UrgentAge: 3 * time.Hour})
	if _, err := p.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := append(h.sink.keys(), urgent.keys()...)
	if len(got) != 10 {
		t.Fatalf("first poll submitted %d documents, want 10: %v", len(got), got)
	}
	var fromLow []string
	for _, k := range got {
		if strings.HasPrefix(k, backfill+"/") {
			fromLow = append(fromLow, k)
		}
	}
	// Two indices share 10: 5 each, 4 fresh and 1 backlog; the low index
	// has only its backlog lane (its oldest document), the rest of the
	// batch goes to news.
	if !slices.Equal(fromLow, low[:1]) {
		t.Errorf("the low source got %v, want only its oldest document %v", fromLow, low[:1])
	}
	for _, k := range urgent.keys() {
		if strings.HasPrefix(k, backfill+"/") {
			t.Errorf("a document of the low source went to the urgent queue: %s", k)
		}
	}

	// Nothing else pending: the low source takes the whole batch.
	h2 := newHarness(t)
	h2.rawIndex(t, "news", false)
	backfill2 := h2.rawIndex(t, "backfill", false)
	low2 := h2.addDocs(t, backfill2, "b", 20, time.Now().Add(-20*time.Minute))
	p2 := h2.poller(t, Config{BatchSize: 10, PollInterval: time.Second, BacklogShare: 0.2,
		SourcePriority: markedLow(h2.prefix + "backfill")})
	if _, err := p2.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h2.sink.keys(); !slices.Equal(got, low2[:10]) {
		t.Errorf("with nothing else pending the low source got %v, want its 10 oldest %v", got, low2[:10])
	}
}

// markedLow is a Config.SourcePriority that marks one source low.
func markedLow(low string) func(string) string {
	return func(source string) string {
		if source == low {
			return contentindex.PriorityLow
		}
		return ""
	}
}
