package e2e

import (
	"database/sql"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

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
	loadDocs(t, st.es, docs)
	keys := keysOf(docs)
	sub := subscribe(t, st.rdb, st.prefix)

	publisher := launch(t, "publisher", "publisher", st.publisherEnv(nil))
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, map[string]string{
		// Slow enough that the kill lands mid-drain.
		"CLASSIFIER_BATCH_SIZE":      "50",
		"CLASSIFIER_CONCURRENCY":     "1",
		"CLASSIFIER_CLAIM_LEASE":     "20s",
		"CLASSIFIER_CLAIM_HEARTBEAT": "5s",
		"CONNECT_TIMEOUT":            "5m",
	}))

	if !sub.WaitDistinct(300, 90*time.Second) {
		t.Fatalf("only %d documents delivered within 90s; the drain never got going\n%s", sub.Distinct(), classifier.log.Tail(30))
	}
	before := readDLQCounters(t, classifier)
	_, deliveredAtKill, _, _ := sub.Stats()
	if deliveredAtKill >= len(keys) {
		t.Fatalf("all %d documents were delivered before the kill: the drain is too fast to test this", len(keys))
	}
	node.Kill()
	killed := time.Now()
	t.Logf("SIGKILLed Elasticsearch with %d of %d documents delivered", deliveredAtKill, len(keys))
	time.Sleep(20 * time.Second)
	_, duringOutage, _, _ := sub.Stats()
	node.Start()
	t.Logf("Elasticsearch back after %s (%d delivered while it was down: rows already in the outbox)",
		time.Since(killed).Round(time.Second), duringOutage-deliveredAtKill)

	missing := sub.WaitAll(keys, 150*time.Second)
	total, distinct, dups, last := sub.Stats()
	t.Logf("delivered %d of %d (%d messages, %d duplicates); last delivery %s after the kill",
		distinct, len(keys), total, dups, last.Sub(killed).Round(time.Millisecond))
	if len(missing) > 0 {
		t.Errorf("%d documents not delivered within 150s of the restart, e.g. %s\nclassifier:\n%s",
			len(missing), missing[0], logLines(classifier.Output(), 15, "level=ERROR", "level=WARN"))
	}
	checkNoRetriesSpent(t, classifier, st.prefix, before)
	logDLQSummary(t, classifier, st.prefix)
	if !classifier.Running() || !publisher.Running() {
		t.Errorf("a service died during the outage: classifier running %t, publisher running %t", classifier.Running(), publisher.Running())
	}
	checkNoCrash(t, classifier, publisher)
}

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
	classifier := launch(t, "classifier", "classifier", st.classifierEnv("e2e-"+st.prefix, map[string]string{
		"CLASSIFIER_BATCH_SIZE":      "20",
		"CLASSIFIER_CONCURRENCY":     "1",
		"CLASSIFIER_CLAIM_LEASE":     "20s",
		"CLASSIFIER_CLAIM_HEARTBEAT": "5s",
	}))

	if !sub.WaitDistinct(100, 90*time.Second) {
		t.Fatalf("only %d documents delivered within 90s; the drain never got going\n%s", sub.Distinct(), classifier.log.Tail(30))
	}
	before := readDLQCounters(t, classifier)
	_, atStop, _, _ := sub.Stats()
	if atStop >= len(keys) {
		t.Fatalf("all %d documents were delivered before the stop: the drain is too fast to test this", len(keys))
	}
	pg.Stop()
	stopped := time.Now()
	t.Logf("stopped the outbox database with %d of %d documents delivered", atStop, len(keys))
	time.Sleep(2 * time.Minute)
	duringOutage := readDLQCounters(t, classifier)
	pg.Start()
	t.Logf("outbox database back after %s; DLQ counters during the outage %+v (before %+v)",
		time.Since(stopped).Round(time.Second), duringOutage, before)

	missing := sub.WaitAll(keys, 120*time.Second)
	total, distinct, dups, last := sub.Stats()
	t.Logf("delivered %d of %d (%d messages, %d duplicates); last delivery %s after the database came back",
		distinct, len(keys), total, dups, last.Sub(stopped.Add(2*time.Minute)).Round(time.Millisecond))
	if len(missing) > 0 {
		t.Errorf("%d documents not delivered within 120s of the restart, e.g. %s\nclassifier:\n%s\npublisher:\n%s",
			len(missing), missing[0], logLines(classifier.Output(), 15, "level=ERROR", "level=WARN"),
			logLines(publisher.Output(), 10, "level=ERROR", "level=WARN"))
	}
	checkNoRetriesSpent(t, classifier, st.prefix, before)
	logDLQSummary(t, classifier, st.prefix)

	db, err := sql.Open("postgres", st.publisherDB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, failed, retried int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(*) FILTER (WHERE status = 'failed'), COUNT(*) FILTER (WHERE retry_count > 0)
		FROM classified_outbox`).Scan(&rows, &failed, &retried); err != nil {
		t.Fatalf("read the outbox: %v", err)
	}
	t.Logf("outbox: %d rows, %d failed, %d with retries", rows, failed, retried)
	if rows != len(keys) || failed != 0 || retried != 0 {
		t.Errorf("outbox has %d rows (%d failed, %d with retries), want %d rows, none failed or retried", rows, failed, retried, len(keys))
	}
	if !classifier.Running() || !publisher.Running() {
		t.Errorf("a service died during the outage: classifier running %t, publisher running %t", classifier.Running(), publisher.Running())
	}
	checkNoCrash(t, classifier, publisher)
}
