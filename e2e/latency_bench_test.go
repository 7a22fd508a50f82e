package e2e

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/infrastructure/testenv/benchfloor"
)

// latencyDocsDefault is the number of documents (samples) of
// BenchmarkEndToEndLatency; BENCH_LATENCY_DOCS overrides it, and
// BENCH_LATENCY_RATE the arrival rate (latencyRateDefault docs/s).
const (
	latencyDocsDefault = 3000
	latencyRateDefault = 100
)

// probeEvery is how often the latency benchmark looks for newly visible
// documents: the refresh stage is measured to within this.
const probeEvery = 50 * time.Millisecond

// BenchmarkEndToEndLatency writes crawler-shaped raw documents (no copies)
// one index request each at a steady 100 a second (loader -rate: no
// backlog), with a classifier and a publisher running at their documented
// defaults, and times each document from its acknowledged write to its
// message at a Redis subscriber. It reports p50_ms, p99_ms, max_ms over
// every published document (samples; not_published counts the documents
// the classifier recorded as duplicates, expected 0 here), the arrival rate achieved (arrival_docs/s), the
// duplicates (classified_twice, published_twice: must be 0), and where the
// time went, as p50 and p99 of each stage from timestamps taken as they
// happen:
//   - refresh: the write to the first search that finds it (a probe every
//     50 ms: up to 50 ms late);
//   - poll_wait: visible to the claim (claimed_at of the document's row in
//     raw_claims, the lease table, read every 100 ms while the benchmark
//     runs: a finished row is kept two seconds; absent, this and the next
//     are reported together as poll_classify_commit);
//   - classify_commit: the claim to the outbox row's created_at (queue,
//     classification, the commit's statements);
//   - outbox: created_at to published_at (the publisher's claim, PUBLISH
//     and mark: published_at is stamped by the mark, after the PUBLISH);
//   - publish: created_at to the subscriber's receipt.
//
// Beside them, the machine's floors while it runs (package benchfloor):
// the p99 of a Postgres SELECT 1, a durable one-row INSERT commit, a Redis
// PUBLISH to receipt, and an Elasticsearch write waiting for the refresh
// that makes it searchable (floor_es_visible_p99_ms: the raw index's
// refresh interval, which no document's latency can beat).
func BenchmarkEndToEndLatency(b *testing.B) {
	n := envInt(b, "BENCH_LATENCY_DOCS", latencyDocsDefault)
	rate := envInt(b, "BENCH_LATENCY_RATE", latencyRateDefault)
	classifierDB := testenv.Postgres(b)
	publisherDB := testenv.Postgres(b)
	es, prefix := testenv.Elasticsearch(b)
	rdb := testenv.Redis(b)
	sub := subscribe(b, rdb, prefix)

	launch(b, "publisher", "publisher", map[string]string{"PUBLISHER_DATABASE_URL": publisherDB, "LOG_LEVEL": "warn"})
	rawIndices := prefix + "*" + contentindex.RawSuffix
	// The sources' raw indices exist before the classifier starts, as a
	// running system's do. A raw index created later is found at the
	// poller's next listing of indices (every 5 s, poller.IndexRefreshDefault):
	// a one-off wait of a new source's first documents, not the steady
	// state measured here, and once the largest share of this figure's p99.
	for _, src := range []string{prefix + "_a", prefix + "_b"} {
		if err := contentindex.CreateIndex(context.Background(), es, contentindex.RawIndex(src)); err != nil {
			b.Fatal(err)
		}
	}
	launch(b, "classifier", "classifier", map[string]string{
		"CLASSIFIER_DATABASE_URL":        classifierDB,
		"CLASSIFIER_OUTBOX_DATABASE_URL": testenv.WithUser(b, publisherDB, "classifier", "classifier"),
		"CLASSIFIER_INDEX_PATTERN":       rawIndices,
		"CLASSIFIER_ID":                  "bench-latency",
		"LOG_LEVEL":                      "warn",
	})

	probe := newVisibilityProbe(es, rawIndices)
	floorDB, err := sql.Open("postgres", classifierDB)
	if err != nil {
		b.Fatal(err)
	}
	defer floorDB.Close()
	// The refresh floor: a write that waits for the refresh making it
	// searchable (refresh=wait_for), into an index of its own.
	floorIndex := prefix + "_floor"
	floor := benchfloor.Start(b, floorDB, rdb, benchfloor.Extra{Name: "es_visible", Probe: func(ctx context.Context) error {
		res, err := es.Index(floorIndex, strings.NewReader(`{"at":1}`), es.Index.WithContext(ctx), es.Index.WithRefresh("wait_for"))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.IsError() {
			return fmt.Errorf("floor write: %s", res.Status())
		}
		return nil
	}})
	b.ResetTimer()
	load := exec.Command(binaryB(b, "loader"), "-count", strconv.Itoa(n), "-rate", strconv.Itoa(rate),
		"-sources", prefix+"_a,"+prefix+"_b", "-seed", "17", "-shape", "crawler", "-dup-rate", "0")
	stdout, err := load.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var loadErr bytes.Buffer
	load.Stderr = &loadErr
	start := time.Now()
	if err := load.Start(); err != nil {
		b.Fatal(err)
	}
	probeDone := probe.run()
	claims := watchClaims(b, classifierDB)
	scanner := bufio.NewScanner(stdout)
	for scanner.Scan() {
		f := strings.Fields(scanner.Text())
		if len(f) != 4 || f[0] != "indexed" {
			continue
		}
		ns, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			b.Fatalf("loader line %q: %v", scanner.Text(), err)
		}
		probe.add(f[1], f[2], time.Unix(0, ns))
	}
	if err := load.Wait(); err != nil {
		b.Fatalf("loader: %v\n%s", err, loadErr.String())
	}
	arrival := float64(n) / time.Since(start).Seconds()
	if arrival < 0.9*float64(rate) {
		b.Logf("the writes reached %.1f docs/s of %d: the machine could not keep the arrival rate, so the figures include a backlog", arrival, rate)
	}
	// Every document classified, every outbox row published and received:
	// a document recorded as a duplicate has no row and no message.
	outboxDB, err := sql.Open("postgres", publisherDB)
	if err != nil {
		b.Fatal(err)
	}
	defer outboxDB.Close()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		done := countStatus(b, es, prefix, contentindex.StatusClassified) + countStatus(b, es, prefix, contentindex.StatusFailed)
		rows, unpublished := outboxProgress(b, outboxDB)
		if done == n && unpublished == 0 && sub.Distinct() >= rows {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("5 minutes after the last write: %d of %d classified, %d outbox rows (%d unpublished), %d received",
				done, n, rows, unpublished, sub.Distinct())
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.StopTimer()
	probeDone()
	floor.Report(b)
	time.Sleep(time.Second) // a second copy would arrive right behind the first

	indexed, visible := probe.times()
	if len(indexed) != n {
		b.Fatalf("the loader reported %d writes, want %d", len(indexed), n)
	}
	claimed := claims()
	created, published := outboxTimes(b, publisherDB)
	var total, refresh, pollWait, classify, pollClassify, outbox, publish []time.Duration
	twice := 0
	sub.mu.Lock()
	for k, at := range indexed {
		d := sub.byKey[k]
		if d == nil {
			continue // a duplicate, recorded and not published
		}
		twice += d.count - 1
		total = append(total, d.at.Sub(at))
		vis, seen := visible[k]
		if seen {
			refresh = append(refresh, vis.Sub(at))
		}
		c, inOutbox := created[k]
		if cl, ok := claimed[k]; ok && seen && inOutbox {
			pollWait = append(pollWait, cl.Sub(vis))
			classify = append(classify, c.Sub(cl))
		} else if seen && inOutbox {
			pollClassify = append(pollClassify, c.Sub(vis))
		}
		if inOutbox {
			outbox = append(outbox, published[k].Sub(c))
			publish = append(publish, d.at.Sub(c))
		}
	}
	sub.mu.Unlock()
	_, classifiedTwice := historyTwice(b, classifierDB)

	q := func(d []time.Duration, p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(total, 0.5), "p50_ms")
	b.ReportMetric(q(total, 0.99), "p99_ms")
	b.ReportMetric(q(total, 1), "max_ms")
	b.ReportMetric(float64(len(total)), "samples")
	b.ReportMetric(float64(n-len(total)), "not_published")
	b.ReportMetric(arrival, "arrival_docs/s")
	b.ReportMetric(float64(twice), "published_twice")
	b.ReportMetric(float64(classifiedTwice), "classified_twice")
	for _, st := range []struct {
		name string
		d    []time.Duration
	}{{"refresh", refresh}, {"poll_wait", pollWait}, {"classify_commit", classify},
		{"poll_classify_commit", pollClassify}, {"outbox", outbox}, {"publish", publish}} {
		if len(st.d) == 0 {
			continue
		}
		b.ReportMetric(q(st.d, 0.5), st.name+"_p50_ms")
		b.ReportMetric(q(st.d, 0.99), st.name+"_p99_ms")
	}
}

// visibilityProbe records when each written document is first found by a
// search: the end of the refresh that made it visible, to within
// probeEvery.
type visibilityProbe struct {
	es      *esclient.Client
	indices string

	mu      sync.Mutex
	indexed map[string]time.Time // docKey -> acknowledged write
	pending map[string][2]string // docKey -> source, id; not yet seen
	visible map[string]time.Time
}

func newVisibilityProbe(es *esclient.Client, indices string) *visibilityProbe {
	return &visibilityProbe{es: es, indices: indices, indexed: map[string]time.Time{},
		pending: map[string][2]string{}, visible: map[string]time.Time{}}
}

func (p *visibilityProbe) add(source, id string, at time.Time) {
	k := docKey(source, id)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.indexed[k] = at
	p.pending[k] = [2]string{source, id}
}

// run probes until the returned stop is called and every document written
// so far was seen (or 10 s passed).
func (p *visibilityProbe) run() (stop func()) {
	stopc, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		var stopping <-chan time.Time
		for {
			select {
			case <-stopc:
				stopc, stopping = nil, time.After(10*time.Second)
			case <-stopping:
				return
			case <-tick.C:
			}
			if left := p.look(); left == 0 && stopc == nil {
				return
			}
		}
	}()
	return func() { close(stopc); <-done }
}

// look searches for the pending documents once and returns how many are
// still not visible.
func (p *visibilityProbe) look() int {
	p.mu.Lock()
	ids := make([]string, 0, len(p.pending))
	for _, sid := range p.pending {
		ids = append(ids, sid[1])
	}
	p.mu.Unlock()
	if len(ids) == 0 {
		return 0
	}
	hits, err := searchRaw(p.es, p.indices, len(ids), map[string]any{"ids": map[string]any{"values": ids}}, "id", "source_name")
	now := time.Now()
	if err != nil {
		return len(ids)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range hits {
		k := docKey(h.SourceName, h.ID)
		if _, ok := p.pending[k]; ok {
			delete(p.pending, k)
			p.visible[k] = now
		}
	}
	return len(p.pending)
}

func (p *visibilityProbe) times() (indexed, visible map[string]time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.indexed), maps.Clone(p.visible)
}

// watchClaims reads the lease table of the classifier database dsn every
// 100 ms until the returned function is called, and that function returns
// the first claimed_at seen for each document. A claim is a row of
// raw_claims, not a field of the raw document; a finished row is kept for
// the raw index's refresh (two seconds), so none is missed.
func watchClaims(tb testing.TB, dsn string) func() map[string]time.Time {
	tb.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]time.Time{}
	read := func() {
		rows, err := db.Query(`SELECT raw_index, doc_id, claimed_at FROM raw_claims`)
		if err != nil {
			return // the next read sees the rows
		}
		defer rows.Close()
		for rows.Next() {
			var idx, id string
			var at time.Time
			if rows.Scan(&idx, &id, &at) != nil {
				return
			}
			k := docKey(strings.TrimSuffix(idx, contentindex.RawSuffix), id)
			if first, ok := out[k]; !ok || at.Before(first) {
				out[k] = at
			}
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() map[string]time.Time {
		close(stop)
		<-done
		db.Close()
		return out
	}
}

// searchRaw returns up to size raw documents under pattern matching query,
// with only the given fields of their source.
func searchRaw(es *esclient.Client, pattern string, size int, query map[string]any, fields ...string) ([]contentindex.RawDocument, error) {
	body, err := json.Marshal(map[string]any{"size": size, "_source": fields, "query": query})
	if err != nil {
		return nil, err
	}
	res, err := es.Search(es.Search.WithIndex(pattern), es.Search.WithBody(bytes.NewReader(body)),
		es.Search.WithContext(context.Background()))
	if err := esclient.CheckResponse("search raw documents", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed searchHits
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("search raw documents: %w", err)
	}
	docs := make([]contentindex.RawDocument, len(parsed.Hits.Hits))
	for i, h := range parsed.Hits.Hits {
		docs[i] = h.Source
	}
	return docs, nil
}

// outboxProgress counts the outbox rows and those not published yet.
func outboxProgress(tb testing.TB, db *sql.DB) (rows, unpublished int) {
	tb.Helper()
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(*) FILTER (WHERE published_at IS NULL) FROM classified_outbox`).Scan(&rows, &unpublished); err != nil {
		tb.Fatalf("read the outbox: %v", err)
	}
	return rows, unpublished
}

// outboxTimes reads created_at and published_at of every outbox row.
func outboxTimes(tb testing.TB, publisherDB string) (created, published map[string]time.Time) {
	tb.Helper()
	db, err := sql.Open("postgres", publisherDB)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT source_name, content_id, created_at, published_at FROM classified_outbox WHERE published_at IS NOT NULL`)
	if err != nil {
		tb.Fatalf("read the outbox: %v", err)
	}
	defer rows.Close()
	created, published = map[string]time.Time{}, map[string]time.Time{}
	for rows.Next() {
		var source, id string
		var c, p time.Time
		if err := rows.Scan(&source, &id, &c, &p); err != nil {
			tb.Fatal(err)
		}
		created[docKey(source, id)], published[docKey(source, id)] = c, p
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(fmt.Errorf("read the outbox: %w", err))
	}
	return created, published
}
