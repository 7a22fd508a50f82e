package processor

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// A poison document (the pipeline panics on it) is isolated: it lands in the
// DLQ as RULE_PANIC and is failed, while the other 99 of its batch are
// classified, and the worker pool keeps working.
func TestPoisonDocumentIsIsolated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 100)
	poison := ids[37]
	p, err := pipeline.New(pipeline.Config{Topics: e.engine})
	if err != nil {
		t.Fatal(err)
	}
	r := e.replica(t, "r1", panicOn{id: poison, inner: p}, time.Minute)
	r.start(t)

	st := e.waitSettled(t, 100, 60*time.Second)
	for _, id := range ids {
		want := contentindex.StatusClassified
		if id == poison {
			want = contentindex.StatusFailed
		}
		if st[id] != want {
			t.Errorf("%s is %q, want %q", id, st[id], want)
		}
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox`); n != 99 {
		t.Errorf("outbox rows = %d, want 99", n)
	}
	var code string
	var maxRetries int
	if err := e.db.QueryRow(`SELECT error_code, max_retries FROM dead_letter_queue WHERE content_id = $1`, poison).Scan(&code, &maxRetries); err != nil {
		t.Fatalf("poison document not in the DLQ: %v", err)
	}
	if code != string(domain.ErrorCodeRulePanic) || maxRetries != domain.MaxRetriesDefault {
		t.Errorf("DLQ row = %s with %d retries, want RULE_PANIC with %d", code, maxRetries, domain.MaxRetriesDefault)
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM dead_letter_queue`); n != 1 {
		t.Errorf("DLQ rows = %d, want only the poison document", n)
	}
}

// A crash between the Elasticsearch write and the status flip leaves the
// documents claimed with every output written. After the claim lease another
// replica classifies them again: the classified documents are rewritten in
// place and no outbox row is duplicated.
func TestCrashBeforeCommitPointIsReclassifiedWithoutDuplicates(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 30)
	ctx := context.Background()

	// The first replica claims the batch and writes everything but the flip,
	// then "dies" (its stack is simply dropped).
	dead := e.replica(t, "dead", nil, time.Minute)
	found := e.rawDocs(t, ids)
	// The claim has expired, as if the crash happened a lease ago.
	claimed := e.claimExpired(t, "dead", found)
	p, _ := pipeline.New(pipeline.Config{Topics: e.engine})
	results := make([]Result, len(claimed))
	for i, raw := range claimed {
		doc, err := p.Classify(raw)
		if err != nil {
			t.Fatal(err)
		}
		results[i] = Result{Raw: raw, Doc: doc}
	}
	written, failed, retry, _ := dead.committer.write(ctx, results)
	if len(written) != len(ids) || len(failed) != 0 || len(retry) != 0 {
		t.Fatalf("write: %d written, %d failed, %d to retry", len(written), len(failed), len(retry))
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox`); n != len(ids) {
		t.Fatalf("outbox rows before the crash = %d, want %d", n, len(ids))
	}

	// A live replica with a 30-second lease takes the documents over.
	live := e.replica(t, "live", nil, 30*time.Second)
	live.start(t)
	st := e.waitSettled(t, len(ids), 60*time.Second)
	for _, id := range ids {
		if st[id] != contentindex.StatusClassified {
			t.Errorf("%s is %q, want classified", id, st[id])
		}
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox`); n != len(ids) {
		t.Errorf("outbox rows after recovery = %d, want %d (no duplicates)", n, len(ids))
	}
	// Each document has two history rows: the dead replica's attempt and
	// the live replica's classification.
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM (SELECT content_id FROM classification_history
		GROUP BY content_id HAVING COUNT(*) = 2 AND COUNT(DISTINCT split_part(claim_id, '@', 1)) = 2) x`); n != len(ids) {
		t.Errorf("documents with one history row from each replica = %d, want %d", n, len(ids))
	}
	e.refresh(t)
	if n := e.countDocs(t, contentindex.ClassifiedIndex(e.source)); n != len(ids) {
		t.Errorf("classified documents = %d, want %d (rewritten in place)", n, len(ids))
	}
}

// claimExpired claims docs for replica in the lease table and lets the
// claims expire, as if replica had died holding them a lease ago.
func (e *env) claimExpired(t *testing.T, replica string, docs []*domain.RawContent) []*domain.RawContent {
	t.Helper()
	leases, err := lease.New(lease.Config{DB: e.db, Replica: replica})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := leases.ClaimDocs(context.Background(), docs, 0)
	if err != nil || len(claimed) != len(docs) {
		t.Fatalf("claim: %d of %d, err %v", len(claimed), len(docs), err)
	}
	if _, err := e.db.Exec(`UPDATE raw_claims SET lease_until = now() - interval '1 second' WHERE claimed_by = $1`, replica); err != nil {
		t.Fatal(err)
	}
	return claimed
}

// Two replicas split a backlog with no document classified twice, and a
// replica killed with claims in hand has them taken over after the lease.
func TestReplicasSplitBacklogAndTakeOverDeadClaims(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 400)

	// A replica that died holding 20 claims, 10 minutes ago.
	orphans := e.rawDocs(t, ids[:20])
	e.claimExpired(t, "killed", orphans)
	e.refresh(t)

	a := e.replica(t, "a", nil, 5*time.Minute)
	b := e.replica(t, "b", nil, 5*time.Minute)
	a.start(t)
	b.start(t)
	st := e.waitSettled(t, len(ids), 90*time.Second)
	for _, id := range ids {
		if st[id] != contentindex.StatusClassified {
			t.Errorf("%s is %q, want classified", id, st[id])
		}
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM classification_history`); n != len(ids) {
		t.Errorf("history rows = %d, want %d: a document was classified twice", n, len(ids))
	}
	perReplica := map[string]int{}
	rows, err := e.db.Query(`SELECT split_part(claim_id, '@', 1), COUNT(*) FROM classification_history GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r string
		var n int
		if err := rows.Scan(&r, &n); err != nil {
			t.Fatal(err)
		}
		perReplica[r] = n
	}
	// Which live replica took how much depends on scheduling (a fast one
	// may drain all 400 before the other's first poll): reported, not
	// asserted. The dead replica commits nothing.
	if perReplica["killed"] != 0 || perReplica["a"]+perReplica["b"] != len(ids) {
		t.Errorf("work per replica = %v, want a and b to classify all %d and the killed replica nothing", perReplica, len(ids))
	}
	t.Logf("work per replica: %v", perReplica)
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox`); n != len(ids) {
		t.Errorf("outbox rows = %d, want %d", n, len(ids))
	}
}

// The DLQ retry flow: a document whose output write fails goes to the DLQ;
// the retry worker re-reads it by id and re-classifies it, and success
// removes the row. A document that keeps failing exhausts its retries, stays
// visible, and is counted.
func TestDeadLetterRetryToSuccessAndExhaustion(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 2)
	ctx := context.Background()
	dlq := deadletter.NewRepository(e.db)

	// Break the outbox: every write fails with a transient database error
	// (a serialization failure, retried with backoff). An outage would
	// instead hold the batch and charge no retry (fault_test.go).
	if _, err := e.outbox.Exec(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '40001'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON classified_outbox FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	r := e.replica(t, "r", nil, time.Minute)
	r.start(t)
	e.waitSettled(t, 2, 60*time.Second)
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM dead_letter_queue WHERE error_code = 'DB_ERROR' AND retry_count = 0`); n != 2 {
		t.Fatalf("DLQ rows = %d, want 2 DB_ERROR rows", n)
	}

	worker, err := deadletter.NewRetryWorker(deadletter.RetryConfig{ReplicaID: "r", Lease: time.Minute, Leases: r.leases}, dlq, r.raw,
		claim.TrackingSink{Sink: r.processor, Registry: r.registry}, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	due := func(id string) {
		t.Helper()
		if _, err := e.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() - INTERVAL '1 second' WHERE content_id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	retryCount := func(id string) int {
		return e.count(t, e.db, `SELECT retry_count FROM dead_letter_queue WHERE content_id = $1`, id)
	}
	// A claim is finished just after its document's flip: until then a
	// retry's claim of the document is refused (it would come back after
	// the DLQ entry's lease), so each retry below waits for it first.
	claimFinished := func(id string) {
		t.Helper()
		waitUntil(t, 30*time.Second, func() bool {
			return e.count(t, e.db, `SELECT COUNT(*) FROM raw_claims WHERE doc_id = $1 AND NOT done`, id) == 0
		})
	}
	// ids[0] waits until its turn below, however long the attempts on
	// ids[1] take on a busy machine (its first delay is only 30 s).
	if _, err := e.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() + INTERVAL '1 hour' WHERE content_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}

	// Exhaustion: ids[1] fails five more times.
	for attempt := 1; attempt <= domain.MaxRetriesDefault; attempt++ {
		due(ids[1])
		claimFinished(ids[1])
		if n, err := worker.RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("retry %d: submitted %d, err %v", attempt, n, err)
		}
		// The failure is recorded, then the raw document is flipped back to
		// failed: wait for both before the next attempt claims it.
		waitUntil(t, 30*time.Second, func() bool {
			return retryCount(ids[1]) == attempt && e.statuses(t)[ids[1]] == contentindex.StatusFailed
		})
	}
	due(ids[1])
	if n, err := worker.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("an exhausted entry was retried: submitted %d, err %v", n, err)
	}
	stats, err := dlq.GetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Exhausted != 1 || stats.Pending != 1 || stats.OldestEntry == nil {
		t.Errorf("stats = %+v, want 1 exhausted and 1 pending", stats)
	}
	if got := e.metric(t, "classifier_dlq_exhausted_total"); got != 1 {
		t.Errorf("classifier_dlq_exhausted_total = %v, want 1", got)
	}

	// Success: repair the outbox; ids[0]'s retry re-classifies it and
	// removes its row.
	if _, err := e.outbox.Exec(`DROP TRIGGER refuse ON classified_outbox`); err != nil {
		t.Fatal(err)
	}
	due(ids[0])
	claimFinished(ids[0])
	if n, err := worker.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("retry: submitted %d, err %v", n, err)
	}
	waitUntil(t, 30*time.Second, func() bool {
		return e.count(t, e.db, `SELECT COUNT(*) FROM dead_letter_queue WHERE content_id = $1`, ids[0]) == 0
	})
	if st := e.statuses(t); st[ids[0]] != contentindex.StatusClassified || st[ids[1]] != contentindex.StatusFailed {
		t.Errorf("statuses = %v, want %s classified and %s failed", st, ids[0], ids[1])
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox WHERE content_id = $1`, ids[0]); n != 1 {
		t.Errorf("outbox rows for the retried document = %d, want 1", n)
	}
	if got := e.metric(t, "classifier_dlq_processed_total"); got != 1 {
		t.Errorf("classifier_dlq_processed_total = %v, want 1", got)
	}
	if got := e.metric(t, "classifier_documents_retried_total"); got != 1 {
		t.Errorf("classifier_documents_retried_total = %v, want 1", got)
	}

	// An operator requeues the exhausted entry: it is due again, retries reset.
	entries, err := dlq.List(ctx, deadletter.Filter{}, nil, 10)
	if err != nil || len(entries) != 1 || !entries[0].Exhausted {
		t.Fatalf("list = %+v, %v; want the exhausted entry", entries, err)
	}
	if err := dlq.Requeue(ctx, entries[0].ID); err != nil {
		t.Fatal(err)
	}
	if retryCount(ids[1]) != 0 {
		t.Error("requeue did not reset the retry count")
	}
}

func waitUntil(t *testing.T, timeout time.Duration, ok func() bool) {
	t.Helper()
	testenv.WaitFor(t, timeout, 50*time.Millisecond, "the condition", ok)
}
