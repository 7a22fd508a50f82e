package processor

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dedup"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/loadgen"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/republish"
	"github.com/north-cloud/infrastructure/contentindex"
)

// A statement's failure is not an outage. These tests run a whole replica
// against the real services with rows that one statement refuses, and
// expect the rest to flow with every breaker closed.

// loadWith writes n generated documents with the given ids (a generated id
// for an empty one) and returns the ids.
func (e *env) loadWith(t *testing.T, seed uint64, ids ...string) []string {
	t.Helper()
	gen := loadgen.NewGenerator(seed)
	docs := make([]contentindex.RawDocument, len(ids))
	out := make([]string, len(ids))
	for i, id := range ids {
		docs[i] = gen.Document(e.source, i)
		if id != "" {
			docs[i].ID = id
		}
		out[i] = docs[i].ID
	}
	if err := loadgen.Load(context.Background(), e.es, docs, 500, nil); err != nil {
		t.Fatal(err)
	}
	e.refresh(t)
	return out
}

// withHygiene gives the replica's committer the duplicate and republish
// decisions the service runs with.
func (e *env) withHygiene(r *replica) {
	r.committer.outbox.hygiene = &Hygiene{Duplicates: dedup.New(e.db, dedup.Config{}), Outcomes: republish.New(e.db)}
}

// reasons returns the classification_error of every raw document.
func (e *env) reasons(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, src := range rawtest.Sources(t, e.es, contentindex.RawIndex(e.source)) {
		var d struct {
			Reason string `json:"classification_error"`
		}
		if err := json.Unmarshal(src, &d); err != nil {
			t.Fatal(err)
		}
		out[id] = d.Reason
	}
	return out
}

// outboxIDs returns the content ids in the outbox.
func (e *env) outboxIDs(t *testing.T) map[string]bool {
	t.Helper()
	rows, err := e.outbox.Query(`SELECT content_id FROM classified_outbox`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// deadLetters returns the error code and message of every dead-letter entry.
func (e *env) deadLetters(t *testing.T) map[string][2]string {
	t.Helper()
	rows, err := e.db.Query(`SELECT content_id, error_code, error_message FROM dead_letter_queue`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]string{}
	for rows.Next() {
		var id, code, msg string
		if err := rows.Scan(&id, &code, &msg); err != nil {
			t.Fatal(err)
		}
		out[id] = [2]string{code, msg}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runHealthy starts r with the service's hygiene, waits up to 30 s for
// every document of ids to settle, checks that the first healthy ones were
// classified and published, and returns every document's status and
// failure reason.
func (e *env) runHealthy(t *testing.T, r *replica, ids []string, healthy int) (st, reasons map[string]string) {
	t.Helper()
	e.withHygiene(r)
	r.start(t)
	st = e.waitSettled(t, len(ids), 30*time.Second)
	published := e.outboxIDs(t)
	for _, id := range ids[:healthy] {
		if st[id] != contentindex.StatusClassified || !published[id] {
			t.Errorf("healthy %s is %q, in the outbox: %v; want classified and published", id, st[id], published[id])
		}
	}
	return st, e.reasons(t)
}

// flowsAfterwards loads more documents and waits for all of them to settle
// classified: the replica was not left stopped.
func (e *env) flowsAfterwards(t *testing.T, settled int) {
	t.Helper()
	later := e.loadWith(t, 99, "later-1", "later-2", "later-3", "later-4", "later-5")
	st := e.waitSettled(t, settled+len(later), 30*time.Second)
	for _, id := range later {
		if st[id] != contentindex.StatusClassified {
			t.Errorf("document loaded afterwards %s is %q, want classified", id, st[id])
		}
	}
}

// Two raw ids that differ only by NUL bytes, beside 20 healthy documents:
// both are refused at the door (NUL in id), and both are one key once
// stored (the NUL stripped: "poison"), which once made the dead-letter
// upsert touch one row twice (SQLSTATE 21000), open the Postgres breaker
// and hold the replica for ever. Now the healthy documents are classified
// and published, each twin is failed with its reason in the raw index, the
// queue holds one entry for the stored key "poison" (the first twin's
// failure; the second is the same document as far as the queue can store
// it), no breaker opens, and documents loaded afterwards flow.
func TestNULTwinsDoNotStopTheReplica(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := make([]string, 22)
	ids[20], ids[21] = "poi\x00son", "poison\x00"
	ids = e.loadWith(t, 7, ids...)
	r := e.replica(t, "twins", nil, time.Minute)
	st, reasons := e.runHealthy(t, r, ids, 20)
	for _, twin := range ids[20:] {
		if st[twin] != contentindex.StatusFailed || !strings.HasPrefix(reasons[twin], string(domain.ErrorCodeValidation)) {
			t.Errorf("twin %q is %q (%q), want failed with a VALIDATION_ERROR reason", twin, st[twin], reasons[twin])
		}
	}
	dlq := e.deadLetters(t)
	if len(dlq) != 1 || dlq["poison"][0] != string(domain.ErrorCodeValidation) {
		t.Errorf("dead letters = %v, want one VALIDATION_ERROR entry for the stored key \"poison\"", dlq)
	}
	if n := r.opened.Load(); n != 0 {
		t.Errorf("a breaker opened %d times", n)
	}
	e.flowsAfterwards(t, len(ids))
	if n := r.opened.Load(); n != 0 || !r.breakers.Postgres.Closed() || !r.breakers.Outbox.Closed() {
		t.Errorf("breakers opened %d times; postgres %s, outbox %s", n, r.breakers.Postgres.State(), r.breakers.Outbox.State())
	}
}

// Each record-keeping write meets a row it refuses: a trigger in the test's
// own database raises an exception for one content id in the decision's
// fingerprints, the history, the outbox, the published outcomes and the
// dead-letter queue. The batch is bisected down to that row every time:
// the healthy documents are classified and published, each refused one is
// failed with its own error (dead-lettered with DB_ERROR for a trigger's
// exception, VALIDATION_ERROR for a check violation; the one the
// dead-letter queue refuses is failed in the raw index with both errors and
// counted), no breaker opens, and documents loaded afterwards flow.
func TestRowRefusedByEachWriteIsIsolated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := make([]string, 25)
	copy(ids[20:], []string{"bad-decide", "bad-history", "bad-outbox", "bad-republish", "bad-dlq"})
	ids = e.loadWith(t, 11, ids...)
	for _, tr := range []struct {
		db              *sql.DB
		table, id, code string
	}{
		{e.db, "content_fingerprints", "bad-decide", "P0001"},
		{e.db, "classification_history", "bad-history", "P0001"},
		{e.outbox, "classified_outbox", "bad-outbox", "23514"}, // a check violation
		{e.db, "published_outcomes", "bad-republish", "P0001"},
		{e.db, "dead_letter_queue", "bad-dlq", "P0001"},
	} {
		refuseRow(t, tr.db, tr.table, tr.id, tr.code)
	}
	p, err := pipeline.New(pipeline.Config{Topics: e.engine})
	if err != nil {
		t.Fatal(err)
	}
	// bad-dlq fails in the pipeline, so it reaches the dead-letter queue.
	r := e.replica(t, "refused", panicOn{id: "bad-dlq", inner: p}, time.Minute)
	st, reasons := e.runHealthy(t, r, ids, 20)
	dlq := e.deadLetters(t)
	for _, want := range []struct {
		id   string
		code domain.ErrorCode
	}{
		{"bad-decide", domain.ErrorCodeDB},
		{"bad-history", domain.ErrorCodeDB},
		{"bad-outbox", domain.ErrorCodeValidation},
		{"bad-republish", domain.ErrorCodeDB},
	} {
		reason := reasons[want.id]
		if st[want.id] != contentindex.StatusFailed || !strings.HasPrefix(reason, string(want.code)) || !strings.Contains(reason, "refused by the test: "+want.id) {
			t.Errorf("%s is %q (%q), want failed with %s and its own error", want.id, st[want.id], reason, want.code)
		}
		if got := dlq[want.id]; got[0] != string(want.code) || !strings.Contains(got[1], "refused by the test") {
			t.Errorf("%s dead letter = %v, want %s with its own error", want.id, got, want.code)
		}
	}
	if reason := reasons["bad-dlq"]; st["bad-dlq"] != contentindex.StatusFailed ||
		!strings.HasPrefix(reason, string(domain.ErrorCodeRulePanic)) || !strings.Contains(reason, "not in the dead-letter queue") {
		t.Errorf("bad-dlq is %q (%q), want failed with its panic and the queue's refusal", st["bad-dlq"], reason)
	}
	if _, ok := dlq["bad-dlq"]; ok || len(dlq) != 4 {
		t.Errorf("dead letters = %v, want the four refused rows and not bad-dlq", dlq)
	}
	if got := e.metric(t, "classifier_dlq_write_failures_total"); got != 1 {
		t.Errorf("classifier_dlq_write_failures_total = %v, want 1", got)
	}
	if n := r.opened.Load(); n != 0 {
		t.Errorf("a breaker opened %d times", n)
	}
	e.flowsAfterwards(t, len(ids))
	if n := r.opened.Load(); n != 0 || !r.breakers.Postgres.Closed() || !r.breakers.Outbox.Closed() {
		t.Errorf("breakers opened %d times; postgres %s, outbox %s", n, r.breakers.Postgres.State(), r.breakers.Outbox.State())
	}
}

// refuseRow makes table, in the test's own database db, refuse the rows of
// content id with an exception of SQLSTATE code.
func refuseRow(t *testing.T, db *sql.DB, table, id, code string) {
	t.Helper()
	stmts := []string{
		`CREATE OR REPLACE FUNCTION refuse_row() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			RAISE EXCEPTION 'refused by the test: % of %', NEW.content_id, TG_TABLE_NAME USING ERRCODE = TG_ARGV[0];
		END $$`,
		fmt.Sprintf(`CREATE TRIGGER refuse_%[1]s BEFORE INSERT OR UPDATE ON %[1]s FOR EACH ROW
			WHEN (NEW.content_id = '%[2]s') EXECUTE FUNCTION refuse_row('%[3]s')`, table, id, code),
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Two documents at one canonical URL in one batch: the first (the URL's
// claimant) is published and the other held back behind it as its URL
// duplicate, committed with it. When the claimant fails in that commit (its
// outbox row refused), the duplicate is not flipped behind a document that
// never reached the subscribers: it stays pending, its claim released and
// counted, and classified again it is published, flagged duplicate_of the
// claimant that now sits in the dead-letter queue.
func TestURLTwinOfAFailedClaimantIsPublished(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gen := loadgen.NewGenerator(5)
	a, b := gen.Document(e.source, 0), gen.Document(e.source, 1)
	a.ID, b.ID, b.URL = "url-a", "url-b", a.URL
	if err := loadgen.Load(context.Background(), e.es, []contentindex.RawDocument{a, b}, 10, nil); err != nil {
		t.Fatal(err)
	}
	e.refresh(t)
	ids := []string{a.ID, b.ID}
	refuseRow(t, e.outbox, "classified_outbox", a.ID, "23514")
	r := e.replica(t, "twin", nil, time.Minute)
	e.withHygiene(r)
	results := e.classifyAll(t, ids, nil)
	raws := []*domain.RawContent{results[0].Raw, results[1].Raw}
	ctx := context.Background()
	if won, err := r.leases.ClaimDocs(ctx, raws, 0); err != nil || len(won) != 2 {
		t.Fatalf("claim: %d won, %v", len(won), err)
	}

	r.committer.Commit(ctx, results)

	st := e.statuses(t)
	if st[a.ID] != contentindex.StatusFailed || st[b.ID] != contentindex.StatusPending {
		t.Fatalf("claimant %q, duplicate %q; want failed and pending (requeued, not flipped behind a failed claimant)", st[a.ID], st[b.ID])
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM raw_claims WHERE doc_id = $1`, b.ID); n != 0 {
		t.Errorf("the requeued duplicate still has %d claims; want it released", n)
	}
	if got := e.metric(t, "classifier_documents_requeued_total"); got != 1 {
		t.Errorf("classifier_documents_requeued_total = %v, want 1", got)
	}

	r.start(t)
	st = e.waitSettled(t, 2, 30*time.Second)
	if st[b.ID] != contentindex.StatusClassified || !e.outboxIDs(t)[b.ID] {
		t.Errorf("duplicate is %q, in the outbox: %v; want classified and published", st[b.ID], e.outboxIDs(t)[b.ID])
	}
	if dlq := e.deadLetters(t); dlq[a.ID][0] != string(domain.ErrorCodeValidation) {
		t.Errorf("claimant's dead letter = %v, want VALIDATION_ERROR", dlq[a.ID])
	}
}
