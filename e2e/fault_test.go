package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// The fault-injection tests run the real classifier and publisher binaries
// against real services and break something on purpose: a poisoned document,
// a broken index, a dead dependency, a killed or frozen replica. What they
// hold in place is the failure model of docs/architecture.md: a fault stays with what caused it,
// content identity is (index, id), nothing is lost and nothing is published
// twice. Tests that kill a dependency run it privately (testenv.PrivateES,
// testenv.PrivatePostgres): the shared services serve other tests.

// TestFaultBadDocumentsInOneBatch puts three poisoned documents in one
// commit batch of 200: a NUL in raw_text (Postgres refuses NUL in text), an
// id of 300 characters (wider than the VARCHAR(255) id columns) and a
// 10 MiB document (over the size limit). The 197 healthy ones must be
// delivered exactly once, the NUL one with the NUL stripped, and the other
// two failed at the door with a VALIDATION_ERROR that names the field, in
// Elasticsearch and in the dead-letter queue.
func TestFaultBadDocumentsInOneBatch(t *testing.T) {
	t.Parallel()
	st := sharedStack(t)
	source := st.prefix + "_mixed"
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now().Add(-30 * time.Minute)
	docs := make([]contentindex.RawDocument, 0, 200)
	var nul, longID, huge contentindex.RawDocument
	for i := range 200 {
		d := healthyDoc(source, fmt.Sprintf("%s-%03d", source, i), start.Add(time.Duration(i)*time.Second), rng)
		switch i {
		case 50:
			d.ID = source + "-nul"
			d.RawText = "Before the NUL\x00after the NUL. " + d.RawText
			nul = d
		case 100:
			d.ID = "long-" + strings.Repeat("x", 295) // 300 characters
			longID = d
		case 150:
			d.ID = source + "-huge"
			d.RawText = strings.Repeat("All work and no play makes a very long article. ", (10<<20)/48+1) // > 10 MiB
			d.WordCount = 0
			huge = d
		}
		docs = append(docs, d)
	}
	if len(longID.ID) != 300 {
		t.Fatalf("long id has %d characters", len(longID.ID))
	}
	_, sub, publisher := st.startDrain(t, docs)
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, map[string]string{
		// One poll claims all 200, and they are committed together.
		"CLASSIFIER_BATCH_SIZE":   "200",
		"CLASSIFIER_COMMIT_BATCH": "200",
	}))

	var healthy []string
	for _, d := range docs {
		if d.ID != longID.ID && d.ID != huge.ID && d.ID != nul.ID {
			healthy = append(healthy, docKey(source, d.ID))
		}
	}
	want := append(append([]string{}, healthy...), docKey(source, nul.ID))
	if missing := sub.WaitAll(t, want, 60*time.Second); len(missing) > 0 {
		t.Errorf("%d of %d deliverable documents not delivered (none for 60s), e.g. %.80q", len(missing), len(want), missing[0])
	}
	time.Sleep(3 * time.Second) // a second copy would arrive right behind the first

	var notOnce []string
	for _, k := range healthy {
		if n := sub.Count(k); n != 1 {
			notOnce = append(notOnce, fmt.Sprintf("%s x%d", k, n))
		}
	}
	if len(notOnce) > 0 {
		t.Errorf("%d of %d healthy documents not delivered exactly once, e.g. %v", len(notOnce), len(healthy), notOnce[:min(5, len(notOnce))])
	}
	if m, ok := sub.First(docKey(source, nul.ID)); ok {
		stripped := strings.ReplaceAll(nul.RawText, "\x00", "")
		replaced := strings.ReplaceAll(nul.RawText, "\x00", "\uFFFD")
		switch {
		case strings.ContainsRune(m.Body, 0):
			t.Errorf("the NUL document was delivered with its NUL")
		case m.Body != stripped && m.Body != replaced:
			t.Errorf("the NUL document's body is %.80q..., want the raw text with the NUL stripped: %.80q...", m.Body, stripped)
		}
		if n := sub.Count(docKey(source, nul.ID)); n != 1 {
			t.Errorf("the NUL document was delivered %d times, want once", n)
		}
	} else {
		t.Errorf("the document with a NUL in raw_text was not delivered (its NUL must be stripped)")
	}
	for _, d := range []contentindex.RawDocument{longID, huge} {
		if n := sub.Count(docKey(source, d.ID)); n != 0 {
			t.Errorf("%.40s... was published %d times, want refused at the door", d.ID, n)
		}
	}

	// Elasticsearch: the two refused documents are failed, with a reason
	// naming what is wrong; every other one is classified. Their flips come
	// after the delivered documents' (the dead-letter write first, and a
	// 10 MiB document rewritten whole), so they are awaited, not assumed.
	states := rawStates(t, st.es, contentindex.RawIndex(source), nil)
	for deadline := testenv.GiveUpAt(t, 2*time.Minute); time.Now().Before(deadline); {
		if settled(states[docKey(source, longID.ID)]) && settled(states[docKey(source, huge.ID)]) {
			break
		}
		time.Sleep(200 * time.Millisecond)
		states = rawStates(t, st.es, contentindex.RawIndex(source), nil)
	}
	checkRefused := func(d contentindex.RawDocument, what string, field *regexp.Regexp) {
		s, ok := states[docKey(source, d.ID)]
		switch {
		case !ok:
			t.Errorf("%s: raw document not found", what)
		case s.ClassificationStatus != contentindex.StatusFailed:
			t.Errorf("%s: classification_status = %q (error %q), want failed", what, s.ClassificationStatus, s.ClassificationError)
		case !strings.Contains(s.ClassificationError, "VALIDATION_ERROR") || !field.MatchString(s.ClassificationError):
			t.Errorf("%s: classification_error = %q, want a VALIDATION_ERROR naming %s", what, s.ClassificationError, field)
		}
	}
	checkRefused(longID, "300-character id", regexp.MustCompile(`\bid\b`))
	checkRefused(huge, "10 MiB document", regexp.MustCompile(`(?i)size|bytes|too large|MiB`))
	var notClassified []string
	for _, k := range want {
		if s := states[k]; s.ClassificationStatus != contentindex.StatusClassified {
			notClassified = append(notClassified, fmt.Sprintf("%s: %q %.100q", k, s.ClassificationStatus, s.ClassificationError))
		}
	}
	if len(notClassified) > 0 {
		t.Errorf("%d of %d deliverable raw documents not classified, e.g. %v", len(notClassified), len(want), notClassified[:min(5, len(notClassified))])
	}

	// The dead-letter queue holds both, as validation errors (no retries).
	entries := logDLQSummary(t, classifier, st.prefix)
	for _, c := range []struct {
		what, marker string
	}{{"300-character id", "long-xxxx"}, {"10 MiB document", huge.ID}} {
		e, ok := findDLQ(entries, source, c.marker)
		switch {
		case !ok:
			t.Errorf("%s: not in the DLQ (GET /api/v1/dlq)", c.what)
		case e.ErrorCode != "VALIDATION_ERROR":
			t.Errorf("%s: DLQ error_code = %s (%.200s), want VALIDATION_ERROR", c.what, e.ErrorCode, e.ErrorMessage)
		}
	}
	for _, e := range entries {
		if e.ErrorCode != "VALIDATION_ERROR" {
			t.Errorf("unexpected DLQ entry %.60s: %s %.200s", e.ContentID, e.ErrorCode, e.ErrorMessage)
		}
	}
	if t.Failed() {
		t.Logf("classifier log (failures):\n%s", logLines(classifier.Output(), 6, "level=ERROR", "level=WARN"))
	}
	checkNoCrash(t, classifier, publisher)
}

// TestFaultBadIndexDoesNotStopOthers runs the classifier over three raw
// indices: one whose crawled_at is mapped as keyword (a sort across indices
// on it fails), one blocked for writes (no claim can be written), and a good
// one with 2,000 documents. Every good document must be delivered, and the
// two bad indices reported.
func TestFaultBadIndexDoesNotStopOthers(t *testing.T) {
	t.Parallel()
	st := sharedStack(t)
	good := st.prefix + "_good"
	badMapping := contentindex.RawIndex(st.prefix + "_bad")
	blocked := contentindex.RawIndex(st.prefix + "_blocked")

	// The bad mapping: created by hand with crawled_at as keyword (the
	// template supplies the rest).
	esDo(t, st.es, http.MethodPut, "/"+badMapping, map[string]any{
		"mappings": map[string]any{"properties": map[string]any{"crawled_at": map[string]any{"type": "keyword"}}},
	})
	old := time.Now().Add(-48 * time.Hour)
	loadDocs(t, st.es, healthyDocs(st.prefix+"_bad", 5, 3))
	// The blocked index: older documents than the good ones, more than a
	// poll's batch, then no writes allowed.
	blockedDocs := healthyDocs(st.prefix+"_blocked", 150, 4)
	for i := range blockedDocs {
		blockedDocs[i].CrawledAt = old.Add(time.Duration(i) * time.Second)
	}
	loadDocs(t, st.es, blockedDocs)
	esDo(t, st.es, http.MethodPut, "/"+blocked+"/_settings", map[string]any{"index.blocks.write": true})
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodPut, "/"+blocked+"/_settings", strings.NewReader(`{"index.blocks.write":false}`))
		req.Header.Set("Content-Type", "application/json")
		if res, err := st.es.Perform(req); err == nil {
			res.Body.Close()
		}
	})
	goodDocs := healthyDocs(good, 2000, 5)
	keys, sub, publisher := st.startDrain(t, goodDocs)
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, map[string]string{
		"CLASSIFIER_BATCH_SIZE": "100",
	}))

	start := time.Now()
	missing := sub.WaitAll(t, keys, 150*time.Second)
	if len(missing) > 0 {
		t.Errorf("%d of %d documents of the good index not delivered (none for 150s); the bad indices stopped the others\nclassifier:\n%s",
			len(missing), len(keys), logLines(classifier.Output(), 10, "level=ERROR", "level=WARN"))
	} else {
		t.Logf("the good index's %d documents delivered in %s", len(keys), time.Since(start).Round(time.Millisecond))
	}

	// Both bad indices are reported: by the poll-status API where the
	// classifier has one, else by the classifier_index_poll_failing gauge.
	var report string
	reported := func() bool {
		for _, path := range []string{"/sources/poll-status", "/poll-status", "/indices/poll-status"} {
			if status, body := classifier.api(t, http.MethodGet, path, nil); status == http.StatusOK {
				report = "GET /api/v1" + path + ": " + body
				return strings.Contains(body, badMapping) && strings.Contains(body, blocked)
			}
		}
		_, m := classifier.get("/metrics")
		bad, okBad := metricSum(m, "classifier_index_poll_failing", `index="`+badMapping+`"`)
		blk, okBlk := metricSum(m, "classifier_index_poll_failing", `index="`+blocked+`"`)
		report = fmt.Sprintf("classifier_index_poll_failing: %s=%v (present %t), %s=%v (present %t)", badMapping, bad, okBad, blocked, blk, okBlk)
		return bad >= 1 && blk >= 1
	}
	deadline := testenv.GiveUpAt(t, 30*time.Second)
	for !reported() {
		if time.Now().After(deadline) {
			t.Errorf("the bad indices are never reported; last: %s", report)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("report: %.500s", report)
	status, ready := classifier.get("/ready")
	t.Logf("classifier /ready: %d %.500s", status, ready)
	checkNoCrash(t, classifier, publisher)
}

// TestFaultSameIDInTwoSources loads a_raw_content/1 and b_raw_content/1:
// ids are unique only inside one index, so both are delivered.
func TestFaultSameIDInTwoSources(t *testing.T) {
	t.Parallel()
	st := sharedStack(t)
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := st.prefix+"_a", st.prefix+"_b"
	docs := []contentindex.RawDocument{
		healthyDoc(a, "1", time.Now().Add(-time.Minute), rng),
		healthyDoc(b, "1", time.Now().Add(-time.Minute), rng),
	}
	keys, sub, publisher := st.startDrain(t, docs)
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, nil))

	if missing := sub.WaitAll(t, keys, 30*time.Second); len(missing) > 0 {
		t.Errorf("not delivered (none for 30s): %v (the same id in another source must not shadow it)\nclassifier:\n%s\npublisher:\n%s",
			missing, logLines(classifier.Output(), 10, "level=ERROR", "level=WARN"), logLines(publisher.Output(), 10, "level=ERROR", "level=WARN"))
	}
	time.Sleep(2 * time.Second)
	for _, k := range keys {
		if n := sub.Count(k); n != 1 {
			t.Errorf("%s delivered %d times, want once", k, n)
		}
	}
	states := rawStates(t, st.es, st.prefix+"*"+contentindex.RawSuffix, nil)
	for _, k := range keys {
		if s := states[k]; s.ClassificationStatus != contentindex.StatusClassified {
			t.Errorf("%s: raw status %q (%s), want classified", k, s.ClassificationStatus, s.ClassificationError)
		}
	}
	checkNoCrash(t, classifier, publisher)
}
