package e2e

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// The tests of this file stop or kill a dependency, each a private one,
// and take minutes. They come first among the parallel tests (go test
// releases them in source order, files by name), the one that mostly
// waits first, so that they overlap the rest of the package.

// TestFaultOutboxDatabaseDownTwoMinutes stops the publisher's database (a
// private cluster: the outbox the classifier writes to) with pg_ctl stop -m
// fast for two minutes while 1,000 documents drain, then starts it again.
// Everything must be delivered, nothing exhausted, and the outage must
// spend no dead-letter retry.
func TestFaultOutboxDatabaseDownTwoMinutes(t *testing.T) {
	t.Parallel()
	pg := testenv.PrivatePostgres(t)
	st := sharedStack(t)
	st.publisherDB = pg.URL("publisher", "publisher")
	st.outboxDB = pg.URL("classifier", "publisher") // INSERT-only, granted by the publisher's migrations

	docs := healthyDocs(st.prefix+"_pg", 1000, 21)
	keys := keysOf(docs)
	sub := subscribe(t, st.rdb, st.prefix)
	// The publisher first: its migrations create the outbox and grant the
	// classifier's role INSERT on it.
	publisher := launch(t, "publisher", "publisher", st.publisherEnv(nil))
	loadDocs(t, st.es, docs)
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, outageEnv(20, 1)))

	before, atStop := outageMidDrain(t, sub, classifier, keys, 100, "stop", pg.Stop)
	stopped := time.Now()
	t.Logf("stopped the outbox database with %d of %d documents delivered", atStop, len(keys))
	time.Sleep(2 * time.Minute)
	duringOutage := readDLQCounters(t, classifier)
	pg.Start()
	t.Logf("outbox database back after %s; DLQ counters during the outage %+v (before %+v)",
		time.Since(stopped).Round(time.Second), duringOutage, before)

	missing := sub.WaitAll(t, keys, 120*time.Second)
	total, distinct, dups, last := sub.Stats()
	t.Logf("delivered %d of %d (%d messages, %d duplicates); last delivery %s after the database came back",
		distinct, len(keys), total, dups, last.Sub(stopped.Add(2*time.Minute)).Round(time.Millisecond))
	if len(missing) > 0 {
		t.Errorf("%d documents not delivered (no delivery for 120s after the restart), e.g. %s\nclassifier:\n%s\npublisher:\n%s",
			len(missing), missing[0], logLines(classifier.Output(), 15, "level=ERROR", "level=WARN"),
			logLines(publisher.Output(), 10, "level=ERROR", "level=WARN"))
	}
	checkOutageCostNothing(t, classifier, publisher, st.prefix, before)
	rows, failed, retried := outboxOutcomes(t, st.publisherDB)
	t.Logf("outbox: %d rows, %d failed, %d with retries", rows, failed, retried)
	if rows != len(keys) || failed != 0 || retried != 0 {
		t.Errorf("outbox has %d rows (%d failed, %d with retries), want %d rows, none failed or retried", rows, failed, retried, len(keys))
	}
}

// outageEnv is the classifier's environment in an outage test: batches of
// batch documents on concurrency workers, slow enough that the fault lands
// mid-drain, and a 20s lease renewed every 5s.
func outageEnv(batch, concurrency int) map[string]string {
	return map[string]string{
		"CLASSIFIER_BATCH_SIZE":      strconv.Itoa(batch),
		"CLASSIFIER_CONCURRENCY":     strconv.Itoa(concurrency),
		"CLASSIFIER_CLAIM_LEASE":     "20s",
		"CLASSIFIER_CLAIM_HEARTBEAT": "5s",
	}
}

// outageMidDrain waits until started documents are delivered (the drain got
// going), reads the classifier's DLQ counters and runs fault, which stops
// or kills a dependency (what names it in a failure), with the classifier
// frozen: the outage lands mid-drain however fast this machine drains, and
// the classifier resumes with its queues full and the dependency gone. It
// returns the counters and how many documents were delivered at the fault.
func outageMidDrain(t *testing.T, sub *subscriber, classifier *svc, keys []string, started int, what string, fault func()) (before dlqCounters, delivered int) {
	t.Helper()
	if !sub.WaitDistinct(started, 90*time.Second) {
		t.Fatalf("only %d documents delivered within 90s; the drain never got going\n%s", sub.Distinct(), classifier.log.Tail(30))
	}
	before = readDLQCounters(t, classifier)
	classifier.WhileFrozen(func() {
		if _, delivered, _, _ = sub.Stats(); delivered >= len(keys) {
			t.Fatalf("all %d documents were delivered before the %s: the drain is too fast to test this", len(keys), what)
		}
		fault()
	})
	return before, delivered
}

// checkOutageCostNothing checks what an outage of a dependency must not
// cost: no dead-letter retry spent since before, no service dead or
// crashed. It logs the DLQ entries of prefix.
func checkOutageCostNothing(t *testing.T, classifier, publisher *svc, prefix string, before dlqCounters) {
	t.Helper()
	checkNoRetriesSpent(t, classifier, prefix, before)
	logDLQSummary(t, classifier, prefix)
	if !classifier.Running() || !publisher.Running() {
		t.Errorf("a service died during the outage: classifier running %t, publisher running %t", classifier.Running(), publisher.Running())
	}
	checkNoCrash(t, classifier, publisher)
}

// chaosEvent is one fault the chaos test injects.
type chaosEvent struct {
	at   time.Duration // after the chaos starts
	what string        // classifier, publisher, elasticsearch
}

// TestChaosDeliversEverything loads 4,000 documents and 20 poisoned ones in
// waves into a private Elasticsearch while the classifier and the publisher
// are each SIGKILLed three times at random moments (and started again), and
// the Elasticsearch node is killed and restarted once. Every valid document
// must be delivered, at most 1% of messages duplicated, every poisoned one
// in the dead-letter queue with its code, and no process may crash on its
// own. The figures are printed as a `chaos:` line.
func TestChaosDeliversEverything(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("chaos seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))

	node := testenv.PrivateES(t, testenv.ESOptions{Heap: "384m"})
	st := sharedStack(t)
	st.es, st.esURL = node.Client(), node.URL
	st.prefix = testenv.UniqueName(testenv.IndexPrefix)

	// The corpus: two sources of valid documents, and the poisoned ones.
	var valid []contentindex.RawDocument
	valid = append(valid, healthyDocs(st.prefix+"_north", 2000, seed)...)
	valid = append(valid, healthyDocs(st.prefix+"_south", 2000, seed+1)...)
	rng.Shuffle(len(valid), func(i, j int) { valid[i], valid[j] = valid[j], valid[i] })
	type poisonDoc struct {
		doc    contentindex.RawDocument
		marker string // what the DLQ's content_id must contain
		code   string
	}
	var poison []poisonDoc
	psource := st.prefix + "_poison"
	for i := range 6 {
		d := healthyDoc(psource, fmt.Sprintf("nul-%d\x00tail", i), time.Now().Add(-time.Hour), rng)
		poison = append(poison, poisonDoc{d, fmt.Sprintf("nul-%d", i), "VALIDATION_ERROR"})
	}
	for i := range 6 {
		d := healthyDoc(psource, fmt.Sprintf("long-%d-", i)+strings.Repeat("y", 292), time.Now().Add(-time.Hour), rng)
		poison = append(poison, poisonDoc{d, fmt.Sprintf("long-%d-yyyy", i), "VALIDATION_ERROR"})
	}
	for i, scheme := range []string{"ftp://", "javascript:", "file:///", "mailto:", "gopher://", "data:"} {
		d := healthyDoc(psource, fmt.Sprintf("scheme-%d", i), time.Now().Add(-time.Hour), rng)
		d.URL = scheme + "example.com/x"
		poison = append(poison, poisonDoc{d, d.ID, "VALIDATION_ERROR"})
	}
	for i := range 2 {
		d := healthyDoc(psource, fmt.Sprintf("huge-%d", i), time.Now().Add(-time.Hour), rng)
		d.RawText = strings.Repeat("An enormous page that never ends, over and over. ", (10<<20)/49+1)
		d.WordCount = 0
		poison = append(poison, poisonDoc{d, d.ID, "VALIDATION_ERROR"})
	}

	sub := subscribe(t, st.rdb, st.prefix)
	publisher := launch(t, "publisher", "publisher", st.publisherEnv(map[string]string{
		// Small batches bound what a kill between PUBLISH and the mark
		// can duplicate; a dead publisher's rows come back quickly.
		"PUBLISHER_OUTBOX_BATCH_SIZE":      "10",
		"PUBLISHER_OUTBOX_PUBLISH_TIMEOUT": "3s",
		"PUBLISHER_OUTBOX_STALE_AFTER":     "10s",
	}))
	// The first wave before the classifier starts, so its indices exist.
	waves := splitWaves(valid, 8)
	loadDocs(t, st.es, waves[0])
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, map[string]string{
		"CLASSIFIER_BATCH_SIZE":      "100",
		"CLASSIFIER_CONCURRENCY":     "2",
		"CLASSIFIER_CLAIM_LEASE":     "10s",
		"CLASSIFIER_CLAIM_HEARTBEAT": "3s",
		"CONNECT_TIMEOUT":            "5m",
	}))

	chaosStart := time.Now()
	var (
		mu       sync.Mutex
		lastKill time.Time
		faults   []string
	)
	record := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		lastKill = time.Now()
		faults = append(faults, fmt.Sprintf("%6.1fs %s", time.Since(chaosStart).Seconds(), what))
	}

	// The rest of the corpus arrives in waves while things break; a wave
	// that meets a dead Elasticsearch is written again once it answers.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		poisoned := make([]contentindex.RawDocument, len(poison))
		for i, p := range poison {
			poisoned[i] = p.doc
		}
		rest := append(append([][]contentindex.RawDocument{}, waves[1:]...), poisoned)
		// Written again until Elasticsearch takes it, however long its
		// restart takes on a loaded machine: the run's end bounds it.
		run := testenv.Context(t)
		for i, w := range rest {
			time.Sleep(4 * time.Second)
			for {
				err := tryLoadDocs(st.es, w)
				if err == nil {
					break
				}
				if run.Err() != nil {
					t.Errorf("wave %d never loaded: %v", i+1, err)
					return
				}
				time.Sleep(2 * time.Second)
			}
		}
	}()

	// Three kills of each service and one Elasticsearch restart, at random
	// moments of the first 60 s.
	var events []chaosEvent
	for range 3 {
		events = append(events, chaosEvent{time.Duration(3+rng.IntN(57)) * time.Second, "classifier"})
		events = append(events, chaosEvent{time.Duration(3+rng.IntN(57)) * time.Second, "publisher"})
	}
	events = append(events, chaosEvent{time.Duration(10+rng.IntN(30)) * time.Second, "elasticsearch"})
	sort.Slice(events, func(i, j int) bool { return events[i].at < events[j].at })
	for _, ev := range events {
		if d := time.Until(chaosStart.Add(ev.at)); d > 0 {
			time.Sleep(d)
		}
		switch ev.what {
		case "classifier", "publisher":
			s := classifier
			if ev.what == "publisher" {
				s = publisher
			}
			if s.Running() {
				s.Kill()
				record("SIGKILL " + ev.what)
			}
			time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
			s.Start() // not waiting for ready: Elasticsearch may be down
		case "elasticsearch":
			node.Kill()
			record("SIGKILL elasticsearch")
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(5 * time.Second)
				if err := node.TryStart(); err != nil {
					t.Errorf("restart elasticsearch: %v\n%s", err, node.LogTail(30))
				}
				mu.Lock()
				faults = append(faults, fmt.Sprintf("%6.1fs elasticsearch back", time.Since(chaosStart).Seconds()))
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	classifier.WaitReady(2 * time.Minute)
	publisher.WaitReady(2 * time.Minute)

	validKeys := keysOf(valid)
	missing := sub.WaitAll(t, validKeys, 150*time.Second)
	time.Sleep(3 * time.Second) // late duplicates
	total, _, _, last := sub.Stats()
	delivered, duplicates := 0, 0
	for _, k := range validKeys {
		if n := sub.Count(k); n > 0 {
			delivered++
			duplicates += n - 1
		}
	}
	poisonKeys := make([]string, len(poison))
	for i, p := range poison {
		poisonKeys[i] = docKey(psource, p.doc.ID)
	}
	// The DLQ is written when a poisoned document is refused; wait for it.
	var entries []dlqEntry
	inDLQ := 0
	for deadline := testenv.GiveUpAt(t, 30*time.Second); ; time.Sleep(time.Second) {
		entries = dlqEntries(t, classifier, st.prefix)
		inDLQ = 0
		for _, p := range poison {
			if e, ok := findDLQ(entries, psource, p.marker); ok && e.ErrorCode == p.code {
				inDLQ++
			}
		}
		if inDLQ == len(poison) || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	sinceKill := last.Sub(lastKill)
	mu.Unlock()
	t.Logf("faults:\n%s", strings.Join(faults, "\n"))
	t.Logf("delivered %d of %d valid documents, %d messages, %d duplicates, %d of %d poisoned documents in the DLQ with their code; last delivery %s after the last kill",
		delivered, len(validKeys), total, duplicates, inDLQ, len(poison), sinceKill.Round(time.Millisecond))
	fmt.Printf("chaos: delivered=%d duplicates=%d poison_in_dlq=%d last_kill_to_last_delivery=%.1fs\n",
		delivered, duplicates, inDLQ, sinceKill.Seconds())

	if len(missing) > 0 {
		t.Errorf("%d of %d valid documents never delivered, e.g. %v\nclassifier:\n%s", len(missing), len(validKeys), missing[:min(3, len(missing))],
			logLines(classifier.Output(), 15, "level=ERROR"))
	}
	if limit := len(validKeys) / 100; duplicates > limit {
		t.Errorf("%d duplicate messages, want at most 1%% (%d)", duplicates, limit)
	}
	for _, p := range poison {
		e, ok := findDLQ(entries, psource, p.marker)
		switch {
		case !ok:
			t.Errorf("poisoned document %.30q not in the DLQ", p.marker)
		case e.ErrorCode != p.code:
			t.Errorf("poisoned document %.30q in the DLQ as %s (%.200s), want %s", p.marker, e.ErrorCode, e.ErrorMessage, p.code)
		}
	}
	for _, k := range poisonKeys {
		if n := sub.Count(k); n > 0 {
			t.Errorf("poisoned document %.40q was published %d times", k, n)
		}
	}
	checkNoCrash(t, classifier, publisher)
}

// splitWaves cuts docs into n waves of about the same size.
func splitWaves(docs []contentindex.RawDocument, n int) [][]contentindex.RawDocument {
	out := make([][]contentindex.RawDocument, 0, n)
	size := (len(docs) + n - 1) / n
	for i := 0; i < len(docs); i += size {
		out = append(out, docs[i:min(i+size, len(docs))])
	}
	return out
}

// TestFaultElasticsearchKilledMidDrain runs the classifier and publisher
// against a private Elasticsearch node, SIGKILLs the node while 3,000
// documents drain, leaves it down ~20 s and starts it again. Everything must
// be delivered, and the outage must cost no dead-letter retry: an
// unavailable dependency opens its breaker and pauses the work, it is not a
// failure of the documents in flight.
func TestFaultElasticsearchKilledMidDrain(t *testing.T) {
	t.Parallel()
	node := testenv.PrivateES(t)
	st := sharedStack(t)
	st.es, st.esURL = node.Client(), node.URL
	st.prefix = testenv.UniqueName(testenv.IndexPrefix)

	var docs []contentindex.RawDocument
	docs = append(docs, healthyDocs(st.prefix+"_one", 1500, 11)...)
	docs = append(docs, healthyDocs(st.prefix+"_two", 1500, 12)...)
	keys, sub, publisher := st.startDrain(t, docs)
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix,
		withEnv(outageEnv(100, 2), map[string]string{"CONNECT_TIMEOUT": "5m"})))

	before, deliveredAtKill := outageMidDrain(t, sub, classifier, keys, 300, "kill", node.Kill)
	killed := time.Now()
	t.Logf("SIGKILLed Elasticsearch with %d of %d documents delivered", deliveredAtKill, len(keys))
	time.Sleep(20 * time.Second)
	_, duringOutage, _, _ := sub.Stats()
	node.Start()
	t.Logf("Elasticsearch back after %s (%d delivered while it was down: rows already in the outbox)",
		time.Since(killed).Round(time.Second), duringOutage-deliveredAtKill)

	missing := sub.WaitAll(t, keys, 150*time.Second)
	total, distinct, dups, last := sub.Stats()
	t.Logf("delivered %d of %d (%d messages, %d duplicates); last delivery %s after the kill",
		distinct, len(keys), total, dups, last.Sub(killed).Round(time.Millisecond))
	if len(missing) > 0 {
		t.Errorf("%d documents not delivered (no delivery for 150s after the restart), e.g. %s\nclassifier:\n%s",
			len(missing), missing[0], logLines(classifier.Output(), 15, "level=ERROR", "level=WARN"))
	}
	checkOutageCostNothing(t, classifier, publisher, st.prefix, before)
}
