package e2e

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

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
		for i, w := range rest {
			time.Sleep(4 * time.Second)
			for attempt := 0; ; attempt++ {
				err := tryLoadDocs(st.es, w)
				if err == nil {
					break
				}
				if attempt > 60 {
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
				node.Start()
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
	missing := sub.WaitAll(validKeys, 150*time.Second)
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
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
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
