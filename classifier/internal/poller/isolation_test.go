package poller

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rawindex"
	classtel "github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// collectSink is a work queue with room for everything; it records what it
// was given.
type collectSink struct {
	mu   sync.Mutex
	docs []*domain.RawContent
}

func (s *collectSink) Submit(_ context.Context, d *domain.RawContent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs = append(s.docs, d)
	return nil
}
func (s *collectSink) ShouldThrottle() bool { return false }
func (s *collectSink) FreeSlots() int       { return 1000 }

// keys returns "index/id" of every submitted document, sorted.
func (s *collectSink) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.docs))
	for i, d := range s.docs {
		out[i] = d.Index + "/" + d.ID
	}
	slices.Sort(out)
	return out
}

type harness struct {
	es     *esclient.Client
	prefix string
	reader *sdkmetric.ManualReader
	sink   *collectSink
	db     *sql.DB // the lease table's
}

// rawStore returns the raw index store over es.
func rawStore(t *testing.T, es *esclient.Client) *rawindex.Store {
	t.Helper()
	s, err := rawindex.New(rawindex.Config{ES: es, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// leases returns the lease store of replica.
func (h *harness) leases(t *testing.T, replica string) *lease.Store {
	t.Helper()
	s, err := lease.New(lease.Config{DB: h.db, Replica: replica})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	db, _ := dbtest.Migrated(t)
	return &harness{es: es, prefix: prefix, db: db, sink: &collectSink{}}
}

func (h *harness) poller(t *testing.T, cfg Config) *Poller {
	t.Helper()
	h.reader = sdkmetric.NewManualReader() // the metrics of the latest poller
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader)).Meter("test")
	metrics, err := classtel.New(meter, classtel.Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = "replica-test"
	}
	if cfg.IndexPattern == "" {
		cfg.IndexPattern = h.prefix + "*" + contentindex.RawSuffix
	}
	if cfg.Leases == nil {
		cfg.Leases = h.leases(t, cfg.ReplicaID)
	}
	if cfg.Raw == nil {
		cfg.Raw = rawStore(t, h.es)
	}
	p, err := New(cfg, h.sink, metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rawIndex creates the raw index of source with the strict raw mapping, or
// with crawled_at mapped as keyword when badMapping is set.
func (h *harness) rawIndex(t *testing.T, source string, badMapping bool) string {
	t.Helper()
	name := h.prefix + source + contentindex.RawSuffix
	if !badMapping {
		if err := contentindex.CreateIndex(context.Background(), h.es, name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	mapping := contentindex.RawMapping()
	mapping["properties"].(map[string]any)["crawled_at"] = map[string]any{"type": "keyword"}
	body, _ := json.Marshal(map[string]any{"settings": contentindex.Settings(), "mappings": mapping})
	res, err := h.es.Indices.Create(name, h.es.Indices.Create.WithBody(bytes.NewReader(body)))
	check(t, "create "+name, res, err)
	return name
}

// addDocs writes n pending documents to index, crawled at base plus i
// minutes, with _id prefix-i (addLeveled, naming no priority level).
func (h *harness) addDocs(t *testing.T, index, prefix string, n int, base time.Time) []string {
	t.Helper()
	return h.addLeveled(t, index, prefix, "", n, base)
}

func (h *harness) bulk(t *testing.T, body *bytes.Buffer) {
	t.Helper()
	res, err := h.es.Bulk(body, h.es.Bulk.WithRefresh("true"))
	if err := esclient.CheckResponse("bulk", res, err); err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		Errors bool            `json:"errors"`
		Items  json.RawMessage `json:"items"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil || parsed.Errors {
		t.Fatalf("bulk: %v %s", err, parsed.Items)
	}
}

func (h *harness) setWriteBlock(t *testing.T, index string, on bool) {
	t.Helper()
	body := fmt.Sprintf(`{"index.blocks.write": %t}`, on)
	res, err := h.es.Indices.PutSettings(strings.NewReader(body), h.es.Indices.PutSettings.WithIndex(index))
	check(t, "write block "+index, res, err)
}

// status returns the classification_status and claimed_by of a document:
// processing by its owner while a live claim holds it (the lease table),
// else the raw document's status.
func (h *harness) status(t *testing.T, index, id string) (string, string) {
	t.Helper()
	var by string
	err := h.db.QueryRow(`SELECT claimed_by FROM raw_claims WHERE raw_index = $1 AND doc_id = $2 AND lease_until > now() AND NOT done`,
		index, id).Scan(&by)
	if err == nil {
		return contentindex.StatusProcessing, by
	}
	if !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	res, err := h.es.Get(index, id)
	if err := esclient.CheckResponse("get "+id, res, err); err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Source struct {
			Status    string `json:"classification_status"`
			ClaimedBy string `json:"claimed_by"`
		} `json:"_source"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc.Source.Status, doc.Source.ClaimedBy
}

func check(t *testing.T, what string, res *esapi.Response, err error) {
	t.Helper()
	if err := esclient.CheckResponse(what, res, err); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
}

// metricValues returns the data points of an int64 metric by the value of
// label (for example index), summed over the other labels when filter holds.
func (h *harness) metricValues(t *testing.T, name, label string, filter func(map[string]string) bool) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			case metricdata.Sum[int64]:
				points = d.DataPoints
			default:
				t.Fatalf("%s is %T", name, m.Data)
			}
			for _, p := range points {
				labels := map[string]string{}
				for _, kv := range p.Attributes.ToSlice() {
					labels[string(kv.Key)] = kv.Value.Emit()
				}
				if filter == nil || filter(labels) {
					out[labels[label]] += p.Value
				}
			}
		}
	}
	return out
}

func statusOf(t *testing.T, p *Poller, index string) IndexStatus {
	t.Helper()
	for _, s := range p.IndexStatus() {
		if s.Index == index {
			return s
		}
	}
	t.Fatalf("no status for %s in %+v", index, p.IndexStatus())
	return IndexStatus{}
}

// pollUntil polls until the sink holds want documents or 40 polls went by.
func pollUntil(t *testing.T, p *Poller, sink *collectSink, want int) {
	t.Helper()
	for range 40 {
		if _, err := p.PollOnce(context.Background()); err != nil {
			t.Fatalf("PollOnce: %v", err)
		}
		if len(sink.keys()) >= want {
			return
		}
	}
}

// An index whose crawled_at is mapped as keyword and a write-blocked index
// sit beside a good one. The single search over *_raw_content used to fail
// as a whole ("incompatible sort types"), and the blocked index's claims,
// never won, made every poll a "full page" with no wait. Now the good
// index's documents all flow, the two bad indices are reported (IndexStatus,
// the gauge, the counter), and the blocked index is polled again after its
// backoff once the block is lifted.
func TestPollerIsolatesFailingIndices(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	base := time.Now().Add(-2 * time.Hour)
	good := h.rawIndex(t, "good", false)
	badMap := h.rawIndex(t, "badmap", true)
	blocked := h.rawIndex(t, "blocked", false)
	goodIDs := h.addDocs(t, good, "g", 7, base)
	h.addDocs(t, badMap, "m", 2, base.Add(-time.Hour))
	blockedIDs := h.addDocs(t, blocked, "b", 3, base.Add(-time.Hour)) // older: they come first
	h.setWriteBlock(t, blocked, true)
	t.Cleanup(func() { h.setWriteBlock(t, blocked, false) })

	p := h.poller(t, Config{BatchSize: 4, PollInterval: 50 * time.Millisecond,
		IndexRetry: 300 * time.Millisecond, IndexRetryMax: 600 * time.Millisecond})
	// The poller's clock can be held still, so the no-spin check below sees
	// the failing indices inside their backoff however slow the machine.
	var frozen atomic.Pointer[time.Time]
	p.now = func() time.Time {
		if at := frozen.Load(); at != nil {
			return *at
		}
		return time.Now()
	}
	pollUntil(t, p, h.sink, len(goodIDs))
	if got := h.sink.keys(); !slices.Equal(got, goodIDs) {
		t.Fatalf("claimed %v, want the good index's %v", got, goodIDs)
	}
	for _, id := range goodIDs {
		idx, docID, _ := strings.Cut(id, "/")
		if st, by := h.status(t, idx, docID); st != contentindex.StatusProcessing || by != "replica-test" {
			t.Errorf("%s: status %q claimed by %q, want processing by replica-test", id, st, by)
		}
	}

	if s := statusOf(t, p, good); s.Failing {
		t.Errorf("good index reported failing: %+v", s)
	}
	s := statusOf(t, p, badMap)
	if !s.Failing || s.ReasonCode != ReasonMapping || !strings.Contains(s.Reason, "crawled_at") || !strings.Contains(s.Reason, "keyword") ||
		s.NextRetry.IsZero() || s.Since.IsZero() {
		t.Errorf("bad-mapping index status %+v, want failing for its crawled_at keyword mapping", s)
	}
	s = statusOf(t, p, blocked)
	if !s.Failing || s.ReasonCode != ReasonWriteBlocked || !strings.Contains(s.Reason, "cluster_block_exception") {
		t.Errorf("blocked index status %+v, want failing as write_blocked", s)
	}
	for _, id := range blockedIDs {
		idx, docID, _ := strings.Cut(id, "/")
		if st, _ := h.status(t, idx, docID); st != contentindex.StatusPending {
			t.Errorf("%s is %q, want still pending", id, st)
		}
	}
	gauge := h.metricValues(t, "classifier_index_poll_failing", "index", nil)
	if gauge[good] != 0 || gauge[badMap] != 1 || gauge[blocked] != 1 {
		t.Errorf("classifier_index_poll_failing = %v, want good 0, bad-mapping 1, blocked 1", gauge)
	}
	failures := h.metricValues(t, "classifier_index_poll_failures_total", "reason", nil)
	if failures[ReasonMapping] < 1 || failures[ReasonWriteBlocked] < 1 {
		t.Errorf("classifier_index_poll_failures_total by reason = %v, want mapping and write_blocked counted", failures)
	}

	// Nothing left to win: the poller waits its interval, it does not spin.
	// The clock is held just before either failing index is due again (on
	// a loaded machine their backoff may have passed by now, and a due
	// index is rightly polled at once).
	due := statusOf(t, p, blocked).NextRetry
	if other := statusOf(t, p, badMap).NextRetry; other.Before(due) {
		due = other
	}
	at := due.Add(-time.Millisecond)
	frozen.Store(&at)
	if wait := p.step(context.Background()); wait < 40*time.Millisecond {
		t.Errorf("step after the good index drained, both failing indices in their backoff, waits %s; want the poll interval (50ms less jitter)", wait)
	}
	frozen.Store(nil)

	// Lift the block: once its backoff has passed, the blocked index is
	// polled again, its documents are claimed and it is reported healthy.
	h.setWriteBlock(t, blocked, false)
	time.Sleep(time.Until(statusOf(t, p, blocked).NextRetry))
	pollUntil(t, p, h.sink, len(goodIDs)+len(blockedIDs))
	want := slices.Sorted(slices.Values(append(slices.Clone(goodIDs), blockedIDs...)))
	if got := h.sink.keys(); !slices.Equal(got, want) {
		t.Fatalf("after lifting the block claimed %v, want %v", got, want)
	}
	if s := statusOf(t, p, blocked); s.Failing || s.Failures != 0 || s.Reason != "" {
		t.Errorf("blocked index after recovery: %+v, want healthy", s)
	}
	if g := h.metricValues(t, "classifier_index_poll_failing", "index", nil); g[blocked] != 0 || g[badMap] != 1 {
		t.Errorf("classifier_index_poll_failing after recovery = %v, want blocked 0, bad-mapping still 1", g)
	}
}

// A document whose _source.id differs from its _id is claimed, and handed
// on, under its _id: the claim used to target the _source id, a document
// that does not exist, so it could never be won.
func TestPollerClaimsUnderTheHitID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idx := h.rawIndex(t, "ids", false)
	doc, _ := json.Marshal(map[string]any{"id": "someone-else", "url": "https://example.org/a", "source_name": "ids",
		"title": "A", "raw_text": "text", "crawled_at": time.Now().UTC().Format(time.RFC3339), "classification_status": "pending"})
	var body bytes.Buffer
	fmt.Fprintf(&body, "{\"index\":{\"_index\":%q,\"_id\":\"doc-a\"}}\n%s\n", idx, doc)
	h.bulk(t, &body)

	p := h.poller(t, Config{})
	n, err := p.PollOnce(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("PollOnce = %d, %v; want 1 claimed", n, err)
	}
	if got := h.sink.keys(); !slices.Equal(got, []string{idx + "/doc-a"}) {
		t.Errorf("submitted %v, want %s/doc-a", got, idx)
	}
	if st, by := h.status(t, idx, "doc-a"); st != contentindex.StatusProcessing || by != "replica-test" {
		t.Errorf("doc-a is %q claimed by %q, want processing by replica-test", st, by)
	}
	res, err := h.es.Exists(idx, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("a document under the _source id exists (status %d); the claim must not create or touch it", res.StatusCode)
	}
}

// A page of claims that are all lost (another replica claimed every
// document after the search) or all refused (a write block) is not a full page: the
// poller waits its interval instead of polling again at once.
func TestUnwinnableClaimsDoNotMakeAFullPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	base := time.Now().Add(-time.Hour)

	t.Run("lost", func(t *testing.T) {
		h.sink = &collectSink{}
		idx := h.rawIndex(t, "lost", false)
		h.addDocs(t, idx, "l", 3, base)
		p := h.poller(t, Config{IndexPattern: idx, BatchSize: 3, PollInterval: time.Second})
		// Another replica claims every document between our search and our
		// claim.
		other := h.leases(t, "other-replica")
		p.beforeClaim = func(found []*domain.RawContent) {
			docs := make([]lease.Doc, len(found))
			for i, d := range found {
				docs[i] = lease.Doc{Index: d.Index, ID: d.ID, SeqNo: d.SeqNo, PrimaryTerm: d.PrimaryTerm}
			}
			if _, err := other.Claim(context.Background(), docs); err != nil {
				t.Error(err)
			}
		}
		if n, err := p.PollOnce(context.Background()); err != nil || n != 0 {
			t.Fatalf("PollOnce = %d, %v; want 0 won", n, err)
		}
		if wait := p.step(context.Background()); wait < 800*time.Millisecond {
			t.Errorf("after a page of lost claims step waits %s, want the poll interval", wait)
		}
		if got := h.sink.keys(); len(got) != 0 {
			t.Errorf("submitted %v, none of which was won", got)
		}
		if s := statusOf(t, p, idx); s.Failing {
			t.Errorf("lost claims marked the index failing: %+v", s)
		}
	})

	t.Run("refused", func(t *testing.T) {
		h.sink = &collectSink{}
		idx := h.rawIndex(t, "refused", false)
		h.addDocs(t, idx, "r", 3, base)
		h.setWriteBlock(t, idx, true)
		t.Cleanup(func() { h.setWriteBlock(t, idx, false) })
		p := h.poller(t, Config{IndexPattern: idx, BatchSize: 3, PollInterval: time.Second, IndexRetry: time.Hour})
		if n, err := p.PollOnce(context.Background()); err != nil || n != 0 {
			t.Fatalf("PollOnce = %d, %v; want 0 won", n, err)
		}
		if wait := p.step(context.Background()); wait < 800*time.Millisecond {
			t.Errorf("after a page of refused claims step waits %s, want the poll interval", wait)
		}
		if len(h.sink.keys()) != 0 {
			t.Errorf("submitted %v from a write-blocked index", h.sink.keys())
		}
	})
}

// Each index gets its share of a batch: a big backlog in one index does not
// hold back a small, newer one; and alone, the backlog fills whole batches.
func TestPollerGivesEachIndexItsShare(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	base := time.Now().Add(-3 * time.Hour)
	big := h.rawIndex(t, "big", false)
	small := h.rawIndex(t, "small", false)
	h.addDocs(t, big, "big", 20, base)
	smallIDs := h.addDocs(t, small, "small", 3, base.Add(time.Hour)) // newer than the whole backlog

	p := h.poller(t, Config{BatchSize: 6, PollInterval: time.Second})
	r, err := p.poll(context.Background())
	if err != nil || r.won != 6 || !r.more {
		t.Fatalf("poll = %+v, %v; want 6 won and more waiting", r, err)
	}
	got := h.sink.keys()
	for _, id := range smallIDs {
		if !slices.Contains(got, id) {
			t.Errorf("first batch %v lacks %s: the small index waited behind the backlog", got, id)
		}
	}
	// The small index drained, the backlog alone fills whole batches.
	if r, err := p.poll(context.Background()); err != nil || r.won != 6 || !r.more {
		t.Fatalf("second poll = %+v, %v; want 6 won from the backlog and more waiting", r, err)
	}
	if got := h.sink.keys(); len(got) != 12 || len(slices.Compact(slices.Clone(got))) != 12 {
		t.Errorf("after two polls submitted %v, want 12 distinct documents", got)
	}
}

// While a dependency's breaker is not closed the poller neither searches
// nor claims, and looks again soon; Elasticsearch failing as a whole opens
// the Elasticsearch breaker.
func TestPollerPausesWhileABreakerIsOpen(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idx := h.rawIndex(t, "paused", false)
	ids := h.addDocs(t, idx, "p", 2, time.Now().Add(-time.Hour))

	outbox := breaker.MustNew(breaker.Config{Name: "outbox_postgres", Threshold: 1, Cooldown: time.Hour})
	outbox.Failure(errors.New("connection refused"))
	p := h.poller(t, Config{IndexPattern: idx, PollInterval: 2 * time.Second, Breakers: []*breaker.Breaker{outbox}})
	n, err := p.PollOnce(context.Background())
	var paused *pausedError
	if n != 0 || !errors.As(err, &paused) || paused.breaker != outbox {
		t.Fatalf("PollOnce with an open breaker = %d, %v; want 0 and paused by outbox_postgres", n, err)
	}
	if wait := p.step(context.Background()); wait > pauseWaitMax {
		t.Errorf("paused step waits %s, want at most %s", wait, pauseWaitMax)
	}
	for _, id := range ids {
		_, docID, _ := strings.Cut(id, "/")
		if st, _ := h.status(t, idx, docID); st != contentindex.StatusPending {
			t.Errorf("%s is %q while the breaker was open, want pending", id, st)
		}
	}
	outbox.Success()
	if n, err := p.PollOnce(context.Background()); err != nil || n != 2 {
		t.Fatalf("PollOnce after the breaker closed = %d, %v; want 2", n, err)
	}

	// Elasticsearch unreachable: the poll fails and opens its breaker, and
	// the next poll is paused by it.
	dead, err := esclient.NewLazy(esclient.Config{URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	esb := breaker.MustNew(breaker.Config{Name: "elasticsearch", Threshold: 1, Cooldown: time.Hour})
	p2, err := New(Config{ReplicaID: "r", ESBreaker: esb, Leases: h.leases(t, "r"), Raw: rawStore(t, dead)}, h.sink, p.metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.PollOnce(context.Background()); err == nil || errors.As(err, &paused) {
		t.Fatalf("PollOnce against an unreachable Elasticsearch = %v, want a connection error", err)
	}
	if esb.State() != breaker.Open {
		t.Errorf("elasticsearch breaker %s after a connection error, want open", esb.State())
	}
	if _, err := p2.PollOnce(context.Background()); !errors.As(err, &paused) || paused.breaker != esb {
		t.Errorf("PollOnce with the elasticsearch breaker open = %v, want paused", err)
	}
}

func TestFailingNamesSkippedIndices(t *testing.T) {
	t.Parallel()
	if err := Failing([]IndexStatus{{Index: "a_raw_content"}}); err != nil {
		t.Errorf("healthy index reported: %v", err)
	}
	err := Failing([]IndexStatus{{Index: "a_raw_content"}, {Index: "b_raw_content", Failing: true, ReasonCode: ReasonMapping}})
	if err == nil || err.Error() != "1 raw index(es) skipped: b_raw_content (mapping)" {
		t.Errorf("Failing = %v", err)
	}
}

// While documents are arriving (a poll found some within the last poll
// interval) the next poll comes within busyWaitMax, even after an empty
// poll between two refreshes of the index, so a steady stream is not held
// for the whole poll interval; after a whole interval with nothing found a
// replica waits the interval, so an idle one searches no more often.
func TestStepAfterDocumentsPollsSoonAndIdleWaitsTheInterval(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.sink = &collectSink{}
	idx := h.rawIndex(t, "busy", false)
	h.addDocs(t, idx, "b", 3, time.Now().Add(-time.Minute))
	p := h.poller(t, Config{IndexPattern: idx, BatchSize: 10, PollInterval: time.Hour})
	// Moved atomically: the claims step launches in the background read it.
	manual := clock.NewManual(time.Now())
	p.now = manual.Now
	busy := func(what string) {
		t.Helper()
		if wait := p.step(context.Background()); wait <= 0 || wait > busyWaitMax*6/5 {
			t.Errorf("%s: step waits %s, want at most busyWaitMax (%s, plus jitter)", what, wait, busyWaitMax)
		}
		// The step's claim ends before the clock moves: an hour later the
		// documents are left out of the next search by their leases, not
		// by how long ago they were found, and a claim still in flight
		// would have none yet.
		if _, err := p.inflight.collect(); err != nil {
			t.Fatalf("%s: claim: %v", what, err)
		}
	}
	busy("a poll that found 3 of a batch of 10")
	manual.Advance(59 * time.Minute)
	busy("an empty poll 59 minutes after one that found documents")
	manual.Advance(2 * time.Minute)
	if wait := p.step(context.Background()); wait < 48*time.Minute {
		t.Errorf("an empty poll after an hour with nothing found waits %s, want the poll interval (1h less jitter)", wait)
	}
}
