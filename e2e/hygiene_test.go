package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// Queue hygiene: what a subscriber sees when the input is messy. These
// tests run the real classifier and publisher against the shared services.

// backfill loads n documents of source crawled two days ago, oldest first.
func backfill(t testing.TB, es *esclient.Client, source string, n int) []contentindex.RawDocument {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	start := time.Now().Add(-48 * time.Hour)
	docs := make([]contentindex.RawDocument, n)
	for i := range docs {
		docs[i] = healthyDoc(source, fmt.Sprintf("%s-old-%06d", source, i), start.Add(time.Duration(i)*time.Second), rng)
	}
	loadDocs(t, es, docs)
	return docs
}

// insertFresh writes one document crawled now, as a crawler would (no
// refresh), and returns its key and when Elasticsearch acknowledged it.
func insertFresh(t testing.TB, es *esclient.Client, source string, i int, rng *rand.Rand) (string, time.Time) {
	t.Helper()
	d := healthyDoc(source, fmt.Sprintf("%s-fresh-%03d", source, i), time.Now(), rng)
	esDo(t, es, "PUT", "/"+source+contentindex.RawSuffix+"/_doc/"+d.ID, d)
	return docKey(source, d.ID), time.Now()
}

// TestFreshDocumentsOvertakeTheBacklog loads a backlog of 6,000 documents
// crawled two days ago, lets the pipeline start on it, then inserts 20
// documents crawled now, one every 20 ms. Fresh news must not wait behind
// the backlog: of the backlog documents still waiting when the last fresh
// one was written, at least a tenth are still on their way when it
// arrives. (Oldest first, none would be.)
//
// The classifier is frozen (SIGSTOP) from its first delivery until the
// fresh documents are written, so how much of the backlog is still
// waiting does not depend on how fast this machine drains it while the
// test writes them: it resumes mid-drain, its queues full of backlog.
func TestFreshDocumentsOvertakeTheBacklog(t *testing.T) {
	t.Parallel()
	st := sharedStack(t)
	source := st.prefix + "_backfill"
	const backlog, fresh = 6_000, 20
	old := backfill(t, st.es, source, backlog)
	sub := subscribe(t, st.rdb, st.prefix)
	launch(t, "publisher", "publisher", st.publisherEnv(nil))
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, nil))
	oldKeys := keysOf(old)
	if !sub.WaitDistinct(1, 3*time.Minute) {
		t.Fatalf("the backlog did not start draining: %d delivered", sub.Distinct())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var freshKeys []string
	var lastInsert time.Time
	classifier.WhileFrozen(func() {
		for i := range fresh {
			k, _ := insertFresh(t, st.es, source, i, rng)
			freshKeys = append(freshKeys, k)
			time.Sleep(20 * time.Millisecond)
		}
		lastInsert = time.Now()
	})
	if missing := sub.WaitAll(t, freshKeys, 5*time.Minute); len(missing) > 0 {
		t.Fatalf("%d fresh documents not delivered: %v", len(missing), missing)
	}
	// Counted against what was waiting, not against the clock: how fast
	// the backlog drains meanwhile depends on the machine's load. Oldest
	// first, every backlog document waiting when the last fresh one was
	// written would come before it; fresh first, only those already in
	// flight (the work queues and the commits) or drained while the fresh
	// ones travelled do.
	lastFresh := sub.LastArrival(freshKeys)
	waiting, oldLeft := 0, 0
	for _, k := range oldKeys {
		first, ok := sub.arrival(k)
		if !ok || first.After(lastInsert) {
			waiting++
		}
		if !ok || first.After(lastFresh) {
			oldLeft++
		}
	}
	t.Logf("when the last fresh document was written %d of %d backlog documents were waiting; when it arrived, %d (it waited %s)",
		waiting, backlog, oldLeft, lastFresh.Sub(lastInsert).Round(time.Millisecond))
	if waiting < backlog/8 {
		t.Fatalf("inconclusive: only %d of %d backlog documents were still waiting when the fresh ones were written", waiting, backlog)
	}
	// Oldest first leaves nothing; fresh first leaves what did not drain
	// while the fresh documents travelled (refresh, claim, commit, publish:
	// seconds under load, at up to 1,000 backlog documents a second).
	if oldLeft < waiting/10 {
		t.Errorf("fresh documents waited behind the backlog: of the %d old documents waiting when the last fresh one was written, only %d were left when it arrived", waiting, oldLeft)
	}
	if missing := sub.WaitAll(t, oldKeys, 5*time.Minute); len(missing) > 0 {
		t.Errorf("%d backlog documents never delivered (starved?)", len(missing))
	}
}

// BenchmarkFreshDuringBackfill measures how long a fresh document takes
// from its insert to a subscriber while a backlog of 50,000 older
// documents (BENCH_BACKFILL_DOCS) drains: 100 documents inserted one every
// 100 ms after the first 2,000 of the backlog were delivered. It reports
// the p50, p99 and max of that latency and how much of the backlog was
// still undelivered when the last fresh document arrived.
func BenchmarkFreshDuringBackfill(b *testing.B) {
	n := envInt(b, "BENCH_BACKFILL_DOCS", 50_000)
	st := sharedStack(b)
	source := st.prefix + "_backfill"
	old := backfill(b, st.es, source, n)
	sub := subscribe(b, st.rdb, st.prefix)
	b.ResetTimer()
	launch(b, "publisher", "publisher", st.publisherEnv(nil))
	launch(b, "classifier", "classifier", st.classifierEnv("bench-"+st.prefix, nil))
	if !sub.WaitDistinct(min(2_000, n/2), 5*time.Minute) {
		b.Fatalf("the backlog did not start draining: %d delivered", sub.Distinct())
	}
	rng := rand.New(rand.NewPCG(5, 6))
	inserted := map[string]time.Time{}
	var keys []string
	for i := range 100 {
		k, at := insertFresh(b, st.es, source, i, rng)
		inserted[k] = at
		keys = append(keys, k)
		time.Sleep(100 * time.Millisecond)
	}
	if missing := sub.WaitAll(b, keys, 15*time.Minute); len(missing) > 0 {
		b.Fatalf("%d fresh documents not delivered", len(missing))
	}
	lat := make([]float64, 0, len(keys))
	for _, k := range keys {
		at, _ := sub.arrival(k)
		lat = append(lat, float64(at.Sub(inserted[k]).Milliseconds()))
	}
	slices.Sort(lat)
	last := sub.LastArrival(keys)
	left := 0
	for _, k := range keysOf(old) {
		if at, ok := sub.arrival(k); !ok || at.After(last) {
			left++
		}
	}
	b.ReportMetric(lat[len(lat)/2], "p50_ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99_ms")
	b.ReportMetric(lat[len(lat)-1], "max_ms")
	b.ReportMetric(float64(left), "backlog_left")
}

// arrival is when key's first message arrived.
func (s *subscriber) arrival(key string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.byKey[key]
	if !ok {
		return time.Time{}, false
	}
	return d.at, true
}

// envInt reads a positive integer setting of a benchmark, def when unset.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s: want a positive integer, got %q", name, v)
	}
	return n
}

// classifiedDoc is what the tests read back of a classified document.
type classifiedDoc struct {
	ID           string `json:"id"`
	CanonicalURL string `json:"canonical_url"`
	Version      int    `json:"version"`
	DuplicateOf  *struct {
		Index string `json:"index"`
		ID    string `json:"id"`
		Kind  string `json:"kind"`
	} `json:"duplicate_of"`
}

// classifiedDocs reads the classified documents of the indices under
// pattern, by id.
func classifiedDocs(t testing.TB, es *esclient.Client, pattern string) map[string]classifiedDoc {
	t.Helper()
	esDo(t, es, "POST", "/"+pattern+"/_refresh", nil)
	body := esDo(t, es, "POST", "/"+pattern+"/_search", map[string]any{"size": 1000, "query": map[string]any{"match_all": map[string]any{}}})
	var out struct {
		Hits struct {
			Hits []struct {
				Source classifiedDoc `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	docs := map[string]classifiedDoc{}
	for _, h := range out.Hits.Hits {
		docs[h.Source.ID] = h.Source
	}
	return docs
}

// TestSameArticleUnderFiveURLsIsPublishedOnce loads one article under five
// URL variants (scheme and host case, a default port and a trailing slash,
// tracking parameters, a fragment, an AMP path), as five raw documents:
// subscribers get one message; the other four are recorded as URL
// duplicates of it on their classified documents.
func TestSameArticleUnderFiveURLsIsPublishedOnce(t *testing.T) {
	t.Parallel()
	st := sharedStack(t)
	source := st.prefix + "_urls"
	rng := rand.New(rand.NewPCG(8, 9))
	variants := []string{
		"https://news.example.com/2026/11/council-budget",
		"http://NEWS.example.com:80/2026/11/council-budget/",
		"https://news.example.com/2026/11/council-budget?utm_source=twitter&utm_medium=social&fbclid=x1",
		"https://news.example.com/2026/11/council-budget#comments",
		"https://news.example.com/2026/11/council-budget/amp",
	}
	var docs []contentindex.RawDocument
	for i, u := range variants {
		d := healthyDoc(source, fmt.Sprintf("%s-v%d", source, i), time.Now().Add(-time.Minute), rng)
		d.URL = u
		docs = append(docs, d)
	}
	loadDocs(t, st.es, docs)
	sub := subscribe(t, st.rdb, st.prefix)
	launch(t, "publisher", "publisher", st.publisherEnv(nil))
	launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, nil))

	keys := keysOf(docs)
	if !sub.WaitDistinct(1, 2*time.Minute) {
		t.Fatal("no variant was published")
	}
	classified := contentindex.ClassifiedIndex(source)
	var got map[string]classifiedDoc
	deadline := testenv.GiveUpAt(t, 2*time.Minute)
	for {
		got = classifiedDocs(t, st.es, classified)
		if len(got) == len(docs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a second message would arrive right behind
	var published []string
	for _, k := range keys {
		if n := sub.Count(k); n > 0 {
			published = append(published, k)
			if n != 1 {
				t.Errorf("%s published %d times", k, n)
			}
		}
	}
	if len(published) != 1 {
		t.Fatalf("%d of the 5 variants published, want 1: %v", len(published), published)
	}
	original := strings.TrimPrefix(published[0], source+"/")
	dups := 0
	for _, d := range docs {
		c, ok := got[d.ID]
		if !ok {
			t.Errorf("%s not classified", d.ID)
			continue
		}
		if c.CanonicalURL != "https://news.example.com/2026/11/council-budget" {
			t.Errorf("%s: canonical_url %q", d.ID, c.CanonicalURL)
		}
		if d.ID == original {
			if c.DuplicateOf != nil || c.Version != 1 {
				t.Errorf("the published variant: duplicate_of %+v version %d", c.DuplicateOf, c.Version)
			}
			continue
		}
		if c.DuplicateOf == nil || c.DuplicateOf.Kind != "url" || c.DuplicateOf.ID != original ||
			c.DuplicateOf.Index != contentindex.RawIndex(source) {
			t.Errorf("%s: duplicate_of %+v, want a url duplicate of %s", d.ID, c.DuplicateOf, original)
			continue
		}
		dups++
	}
	if dups != 4 {
		t.Errorf("%d recorded URL duplicates, want 4", dups)
	}
}

// TestNearCopyInAnotherSource publishes an article in one source, then a
// copy with one sentence changed under another URL in a second source: by
// default the copy is published flagged with duplicate_of; with
// CLASSIFIER_DUPLICATE_CONTENT_POLICY=skip it is recorded and not published.
func TestNearCopyInAnotherSource(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"flag", "skip"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			st := sharedStack(t)
			wire, daily := st.prefix+"_wire", st.prefix+"_daily"
			rng := rand.New(rand.NewPCG(10, 11))
			orig := healthyDoc(wire, wire+"-1", time.Now().Add(-time.Minute), rng)
			copyDoc := orig
			copyDoc.ID, copyDoc.SourceName = daily+"-7", daily
			copyDoc.URL = "https://daily.example.net/local/" + copyDoc.ID
			sentences := strings.SplitAfter(orig.RawText, ". ")
			sentences[len(sentences)/2] = "A spokesperson declined to comment further on the matter on Tuesday. "
			copyDoc.RawText = strings.Join(sentences, "")
			if copyDoc.RawText == orig.RawText {
				t.Fatal("the edit did not change the text")
			}
			sub := subscribe(t, st.rdb, st.prefix)
			launch(t, "publisher", "publisher", st.publisherEnv(nil))
			launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix,
				map[string]string{"CLASSIFIER_DUPLICATE_CONTENT_POLICY": policy}))
			loadDocs(t, st.es, []contentindex.RawDocument{orig})
			origKey := docKey(wire, orig.ID)
			if missing := sub.WaitAll(t, []string{origKey}, 2*time.Minute); len(missing) > 0 {
				t.Fatal("the original was not published")
			}
			loadDocs(t, st.es, []contentindex.RawDocument{copyDoc})
			copyKey := docKey(daily, copyDoc.ID)
			classified := contentindex.ClassifiedIndex(daily)
			var c classifiedDoc
			deadline := testenv.GiveUpAt(t, 2*time.Minute)
			for time.Now().Before(deadline) {
				if c = classifiedDocs(t, st.es, classified+"*")[copyDoc.ID]; c.ID != "" {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if c.DuplicateOf == nil || c.DuplicateOf.Kind != "content" || c.DuplicateOf.ID != orig.ID ||
				c.DuplicateOf.Index != contentindex.RawIndex(wire) {
				t.Fatalf("the copy's classified document: duplicate_of %+v, want a content duplicate of %s", c.DuplicateOf, orig.ID)
			}
			if policy == "skip" {
				time.Sleep(3 * time.Second) // a message would have arrived by now
				if n := sub.Count(copyKey); n != 0 {
					t.Fatalf("skip policy: the copy was published %d times", n)
				}
				return
			}
			if missing := sub.WaitAll(t, []string{copyKey}, time.Minute); len(missing) > 0 {
				t.Fatal("flag policy: the copy was not published")
			}
			m := sub.Messages(copyKey)[0]
			if m.DuplicateOf == nil || m.DuplicateOf.ID != orig.ID || m.DuplicateOf.Kind != "content" || m.Version != 1 {
				t.Fatalf("flag policy: message duplicate_of %+v version %d", m.DuplicateOf, m.Version)
			}
			if first := sub.Messages(origKey)[0]; first.DuplicateOf != nil {
				t.Fatalf("the original is flagged as a duplicate: %+v", first.DuplicateOf)
			}
		})
	}
}

// TestRuleEditRepublishesOnlyChangedOutcomes publishes 40 documents, adds a
// rule that matches the 20 that mention a marker word, and reprocesses the
// source (every raw document back to pending, as the reprocess API does):
// exactly those 20 are published again, once each, with version 2 and the
// changed fields; the other 20 are not published again. The reprocess is
// the operator's: POST /api/v1/sources/{source}/reprocess.
func TestRuleEditRepublishesOnlyChangedOutcomes(t *testing.T) {
	t.Parallel()
	st := sharedStack(t)
	source := st.prefix + "_edit"
	rng := rand.New(rand.NewPCG(12, 13))
	const marker = "zanzibarquux"
	var docs []contentindex.RawDocument
	for i := range 40 {
		d := healthyDoc(source, fmt.Sprintf("%s-%02d", source, i), time.Now().Add(-time.Hour+time.Duration(i)*time.Second), rng)
		if i%2 == 0 {
			d.RawText += " The " + marker + " festival returns next week."
		}
		docs = append(docs, d)
	}
	loadDocs(t, st.es, docs)
	sub := subscribe(t, st.rdb, st.prefix)
	launch(t, "publisher", "publisher", st.publisherEnv(nil))
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, nil))
	keys := keysOf(docs)
	if missing := sub.WaitAll(t, keys, 2*time.Minute); len(missing) > 0 {
		t.Fatalf("%d documents not published", len(missing))
	}

	db := openDB(t, st.classifierDB)
	if _, err := db.Exec(`INSERT INTO classification_rules (name, topic, keywords, priority, min_keywords)
		VALUES ('e2e marker', 'marker_topic', ARRAY['` + marker + `'], 5, 1)`); err != nil {
		t.Fatal(err)
	}
	// The rule watcher reloads on the NOTIFY: wait until the classifier's
	// own pipeline (its dry run) finds the marker, not for a guessed time.
	probe := docs[0]
	waitFor(t, time.Minute, "the new rule to be live in the classifier", func() bool {
		var res struct {
			Document struct {
				Topics []string `json:"topics"`
			} `json:"document"`
		}
		code, _ := classifier.apiSend(t, "POST", "/classify", probe, &res)
		return code == http.StatusOK && slices.Contains(res.Document.Topics, "marker_topic")
	})
	if code, body := classifier.api(t, "POST", "/sources/"+source+"/reprocess", nil); code != http.StatusAccepted {
		t.Fatalf("reprocess: %d %s", code, body)
	}
	var changed, unchanged []string
	for i, k := range keys {
		if i%2 == 0 {
			changed = append(changed, k)
		} else {
			unchanged = append(unchanged, k)
		}
	}
	deadline := testenv.GiveUpAt(t, 2*time.Minute)
	for time.Now().Before(deadline) {
		done := 0
		for _, k := range changed {
			if sub.Count(k) >= 2 {
				done++
			}
		}
		if done == len(changed) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The unchanged half is reclassified too; wait until it is flipped back.
	waitAllClassified(t, st.es, contentindex.RawIndex(source), len(docs), 2*time.Minute)
	time.Sleep(3 * time.Second) // a late message would arrive by now
	for _, k := range changed {
		msgs := sub.Messages(k)
		if len(msgs) != 2 || msgs[0].Version != 1 || msgs[1].Version != 2 {
			t.Errorf("%s: %d messages, versions %v, want 1 then 2", k, len(msgs), versions(msgs))
			continue
		}
		if !slices.Contains(msgs[1].Topics, "marker_topic") || !slices.Contains(msgs[1].ChangedFields, "topics") {
			t.Errorf("%s version 2: topics %v changed_fields %v", k, msgs[1].Topics, msgs[1].ChangedFields)
		}
	}
	for _, k := range unchanged {
		if msgs := sub.Messages(k); len(msgs) != 1 {
			t.Errorf("%s (outcome unchanged): %d messages, versions %v, want only version 1", k, len(msgs), versions(msgs))
		}
	}
}

func versions(msgs []message) []int {
	out := make([]int, len(msgs))
	for i, m := range msgs {
		out[i] = m.Version
	}
	return out
}

// waitAllClassified waits until n documents of index are classified.
func waitAllClassified(t testing.TB, es *esclient.Client, index string, n int, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := testenv.GiveUpAt(t, timeout)
	for {
		states := rawStates(t, es, index, nil)
		done := 0
		for _, s := range states {
			if s.ClassificationStatus == contentindex.StatusClassified {
				done++
			}
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d documents classified after %s", done, n, time.Since(start).Round(time.Second))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// openDB opens dsn for the test's own queries.
func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
