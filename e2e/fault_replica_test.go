package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
)

// inFlightEnv makes a classifier claim a large batch and work through it
// slowly, so that it holds claimed documents in flight for a while.
var inFlightEnv = map[string]string{
	"CLASSIFIER_BATCH_SIZE":      "1000",
	"CLASSIFIER_MAX_QUEUE_DEPTH": "2000",
	"CLASSIFIER_CONCURRENCY":     "1",
	// The naive matcher (same results, much slower) keeps the worker busy.
	"CLASSIFIER_USE_TRIE_ENGINE": "false",
}

// withEnv returns base with extra on top, leaving both as they are.
func withEnv(base map[string]string, extra map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

// TestFaultClassifierKilledMidBatch SIGKILLs the classifier while it holds
// claimed documents in flight and starts it again, with the same
// CLASSIFIER_ID and with a new one. Every document it held must be
// delivered once. How soon after the kill (about the 15 s lease plus a
// poll on a quiet machine) is a figure, not a bound: the test prints it as
// a `takeover:` line (scripts/test.sh repeats those lines at the end), and
// a loaded machine may stretch it without anything being wrong.
func TestFaultClassifierKilledMidBatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart func(prefix string) string // the restarted replica's id
	}{
		{"same_id", func(prefix string) string { return "e2e-" + prefix + "-a" }},
		{"new_id", func(prefix string) string { return "e2e-" + prefix + "-b" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := sharedStack(t)
			docs := healthyDocs(st.prefix+"_kill", 2000, 31)
			keys, sub, publisher := st.startDrain(t, docs)
			first := "e2e-" + st.prefix + "-a"
			classifier := launch(t, "classifier", "classifier-1", st.classifierEnv(first, inFlightEnv))

			held := waitMidBatch(t, sub, st.classifierDB, first, 20, 100, 60*time.Second)
			classifier.Kill()
			killed := time.Now()
			inFlight, err := claimedKeys(st.classifierDB, first)
			if err != nil {
				t.Fatal(err)
			}
			var heldKeys []string
			for k := range inFlight {
				heldKeys = append(heldKeys, k)
			}
			t.Logf("SIGKILLed %s holding %d claims (%d seen just before the kill); %d of %d documents delivered",
				first, len(heldKeys), held, sub.Distinct(), len(keys))

			second := tc.restart(st.prefix)
			// The replacement runs with the default settings: what is
			// measured is how soon the held claims come back, not how
			// fast a deliberately slowed worker gets through them.
			restarted := launch(t, "classifier", "classifier-2", st.classifierEnv(second, nil))
			missing := sub.WaitAll(t, heldKeys, 3*time.Minute)
			if len(missing) > 0 {
				t.Fatalf("%d of the %d documents in flight at the kill not delivered within 3 minutes\nclassifier-2:\n%s",
					len(missing), len(heldKeys), logLines(restarted.Output(), 10, "level=ERROR", "level=WARN"))
			}
			took := sub.LastArrival(heldKeys).Sub(killed)
			t.Logf("takeover-%s: the %d documents in flight at the kill were delivered %s after it (default lease 15s)",
				tc.name, len(heldKeys), took.Round(time.Millisecond))
			if missing := sub.WaitAll(t, keys, 3*time.Minute); len(missing) > 0 {
				t.Errorf("%d of %d documents never delivered", len(missing), len(keys))
			}
			time.Sleep(2 * time.Second)
			_, _, dups, _ := sub.Stats()
			if dups > 0 {
				t.Errorf("%d duplicate messages: a re-classified document was published again", dups)
			}
			checkNoCrash(t, restarted, publisher)
		})
	}
}

// TestFaultZombieOwnerDoesNotCommitTwice freezes a classifier (SIGSTOP)
// while it holds claims, lets a second replica take them over after a short
// lease, and then resumes the first (SIGCONT), which finishes its stale batch.
// Every document must be published once: one outbox row per document, no
// content id twice on Redis.
func TestFaultZombieOwnerDoesNotCommitTwice(t *testing.T) {
	t.Parallel()
	st := sharedStack(t)
	docs := healthyDocs(st.prefix+"_zombie", 2000, 41)
	keys, sub, publisher := st.startDrain(t, docs)
	lease := withEnv(inFlightEnv, map[string]string{"CLASSIFIER_CLAIM_LEASE": "6s", "CLASSIFIER_CLAIM_HEARTBEAT": "2s"})
	idA, idB := "e2e-"+st.prefix+"-a", "e2e-"+st.prefix+"-b"
	a := launch(t, "classifier", "classifier-a", st.classifierEnv(idA, lease))

	pattern := st.prefix + "*" + contentindex.RawSuffix
	held := waitMidBatch(t, sub, st.classifierDB, idA, 20, 100, 60*time.Second)
	a.Pause()
	paused := time.Now()
	t.Logf("SIGSTOPped %s holding about %d claims; %d of %d delivered", idA, held, sub.Distinct(), len(keys))

	b := launch(t, "classifier", "classifier-b", st.classifierEnv(idB, lease))
	missing := sub.WaitAll(t, keys, 120*time.Second)
	if len(missing) > 0 {
		t.Errorf("with %s frozen, %s did not deliver %d of %d documents with none delivered for 120s (its claims never expired, or a lock of the frozen replica blocks it)\nclassifier-b:\n%s",
			idA, idB, len(missing), len(keys), logLines(b.Output(), 10, "level=ERROR", "level=WARN"))
	} else {
		t.Logf("%s delivered everything %s after the freeze", idB, time.Since(paused).Round(time.Millisecond))
	}
	a.Resume()
	// Let the zombie finish what it held: classify, write, try to commit.
	time.Sleep(10 * time.Second)

	total, distinct, dups, _ := sub.Stats()
	t.Logf("Redis: %d messages for %d documents, %d duplicates", total, distinct, dups)
	var twice []string
	for _, k := range keys {
		if n := sub.Count(k); n > 1 {
			twice = append(twice, fmt.Sprintf("%s x%d", k, n))
		}
	}
	if len(twice) > 0 {
		t.Errorf("%d documents published more than once, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	var rows, distinctIDs int
	queryRow(t, st.publisherDB, "the outbox", `SELECT COUNT(*), COUNT(DISTINCT content_id) FROM classified_outbox`, &rows, &distinctIDs)
	t.Logf("outbox: %d rows, %d distinct content ids", rows, distinctIDs)
	if rows != len(keys) || distinctIDs != len(keys) {
		t.Errorf("outbox has %d rows (%d distinct ids), want exactly one per document (%d)", rows, distinctIDs, len(keys))
	}
	states := rawStates(t, st.es, pattern, nil)
	notClassified := 0
	for _, k := range keys {
		if states[k].ClassificationStatus != contentindex.StatusClassified {
			notClassified++
		}
	}
	if notClassified > 0 {
		t.Errorf("%d raw documents not classified after the takeover", notClassified)
	}
	t.Logf("zombie's view after SIGCONT:\n%s", logLines(a.Output(), 8, "flip", "taken_over", "conflict", "lease", "claim"))
	checkNoCrash(t, a, b, publisher)
}

// TestFaultStopWithOneSecondDeadline sends SIGTERM to a classifier under
// load with HTTP_SHUTDOWN_TIMEOUT=1s: it must exit without a panic (no "send
// on closed channel" from workers outliving the committer), and after a
// restart everything must be delivered.
func TestFaultStopWithOneSecondDeadline(t *testing.T) {
	t.Parallel()
	st := sharedStack(t)
	docs := healthyDocs(st.prefix+"_stop", 3000, 51)
	for i := range docs { // ~12 KB each: several ms of work per document
		docs[i].RawText = strings.Repeat(docs[i].RawText+" ", 4)
		docs[i].WordCount *= 4
	}
	keys, sub, publisher := st.startDrain(t, docs)
	env := st.classifierEnv("e2e-"+st.prefix, withEnv(inFlightEnv, map[string]string{
		// Several workers, each in the middle of a document when the
		// deadline passes: one that finishes after the committer has
		// gone must not send on its closed input.
		"CLASSIFIER_CONCURRENCY":     "4",
		"HTTP_SHUTDOWN_TIMEOUT":      "1s",
		"CLASSIFIER_CLAIM_LEASE":     "10s",
		"CLASSIFIER_CLAIM_HEARTBEAT": "3s",
	}))
	classifier := launch(t, "classifier", "classifier", env)
	held := waitMidBatch(t, sub, st.classifierDB, "e2e-"+st.prefix, 20, 300, 60*time.Second)
	t.Logf("SIGTERM with %d documents delivered and %d claimed", sub.Distinct(), held)

	termAt := time.Now()
	exited, exitErr := classifier.Terminate(15 * time.Second)
	if !exited {
		t.Fatalf("the classifier did not exit within 15s of SIGTERM with a 1s shutdown deadline\n%s", classifier.log.Tail(30))
	}
	t.Logf("exited %s after SIGTERM with %v; %d of %d delivered", time.Since(termAt).Round(time.Millisecond), exitErr, sub.Distinct(), len(keys))
	out := classifier.Output()
	if m := regexp.MustCompile(`remaining_items=(\d+)`).FindStringSubmatch(out); m != nil {
		t.Logf("work queue at SIGTERM: %s documents", m[1])
	}
	if strings.Contains(out, "send on closed channel") {
		t.Errorf("the classifier panicked on stop: send on closed channel\n%s", logLines(out, 10, "panic", "closed channel", "goroutine"))
	}
	if p := classifier.Panics(); len(p) > 0 {
		t.Errorf("the classifier's output shows a crash on stop: %s", p[0])
	}
	t.Logf("shutdown log:\n%s", logLines(out[strings.LastIndex(out, "=== e2e: SIGTERM"):], 20, "stop", "drain", "shutdown", "deadline", "exit", "panic"))

	restarted := launch(t, "classifier", "classifier-restarted", env)
	if missing := sub.WaitAll(t, keys, 120*time.Second); len(missing) > 0 {
		t.Errorf("%d of %d documents lost after the stop and restart (none delivered for 120s)\n%s",
			len(missing), len(keys), logLines(restarted.Output(), 10, "level=ERROR", "level=WARN"))
	}
	if status, _ := restarted.get("/ready"); status != http.StatusOK {
		t.Errorf("restarted classifier /ready = %d", status)
	}
	checkNoCrash(t, restarted, publisher)
}
