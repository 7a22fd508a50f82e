package processor

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// A replica whose lease was taken over while it classified (a zombie:
// paused or starved past its lease) writes nothing of the document at its
// commit: no classified document, history row, outbox row nor flip; the new
// owner commits it. A document changed since the search that found it has
// its flip refused on the version; its claim is finished at that version,
// so it is claimed again as it is now, never as the search saw it. The others are committed and their claims finished.
func TestZombieCommitsNothingAndAChangedDocumentIsReleased(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 4)
	ctx := context.Background()
	zombie := e.replica(t, "zombie", nil, time.Minute)
	results := e.classifyAll(t, ids, nil)
	raws := rawsOf(results) // at the versions classifyAll read
	won, err := zombie.leases.ClaimDocs(ctx, raws, 0)
	if err != nil || len(won) != len(ids) {
		t.Fatalf("claim: %d won, %v", len(won), err)
	}

	// ids[1]'s lease expires and another replica takes it over.
	if _, err := e.db.Exec(`UPDATE raw_claims SET lease_until = now() - interval '1 second' WHERE doc_id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	other, err := lease.New(lease.Config{DB: e.db, Replica: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.ClaimDocs(ctx, e.rawDocs(t, ids[1:2]), 0); err != nil || len(got) != 1 {
		t.Fatalf("takeover: %d won, %v", len(got), err)
	}
	// ids[2] is rewritten by the crawler after the search.
	var body bytes.Buffer
	fmt.Fprintf(&body, "{\"update\":{\"_index\":%q,\"_id\":%q}}\n{\"doc\":{\"title\":\"edited\"}}\n", contentindex.RawIndex(e.source), ids[2])
	res, err := e.es.Bulk(&body, e.es.Bulk.WithRefresh("true"))
	if err := esclient.CheckResponse("edit", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	zombie.committer.Commit(ctx, results)

	st := e.statuses(t)
	want := []string{contentindex.StatusClassified, contentindex.StatusPending, contentindex.StatusPending, contentindex.StatusClassified}
	for i, id := range ids {
		if st[id] != want[i] {
			t.Errorf("document %d is %q, want %q", i, st[id], want[i])
		}
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox WHERE content_id = $1`, ids[1]); n != 0 {
		t.Errorf("the zombie wrote %d outbox rows for the document taken over", n)
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM classification_history WHERE content_id = $1`, ids[1]); n != 0 {
		t.Errorf("the zombie wrote %d history rows for the document taken over", n)
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM raw_claims WHERE doc_id = $1 AND claimed_by = 'other' AND NOT done`, ids[1]); n != 1 {
		t.Errorf("the new owner's claim is gone")
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM raw_claims WHERE done AND claimed_by = 'zombie'`); n != 3 {
		t.Errorf("finished claims = %d, want the 2 flipped and the changed one", n)
	}
	// The changed document is claimable at its new version, not at the one
	// the search returned.
	if got, err := other.ClaimDocs(ctx, raws[2:3], 0); err != nil || len(got) != 0 {
		t.Errorf("the changed document was claimed again at its old version: %d, %v", len(got), err)
	}
	if got, err := other.ClaimDocs(ctx, e.rawDocs(t, ids[2:3]), 0); err != nil || len(got) != 1 {
		t.Errorf("the changed document could not be claimed at its new version: %d, %v", len(got), err)
	}
}

// A document whose lease expired without a commit every time it was
// claimed (it took down, or hung, each replica that took it) is
// dead-lettered as STALLED on its next claim once its stalls reach
// CLASSIFIER_MAX_STALLS, instead of being classified again; the other
// documents flow.
func TestStalledDocumentIsDeadLetteredWhileOthersFlow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 10)
	stalled := ids[0]
	// Three replicas in turn claimed it and died holding the claim.
	for i := range 3 {
		e.claimExpired(t, fmt.Sprintf("dead-%d", i), e.rawDocs(t, []string{stalled}))
	}
	r := e.replica(t, "live", nil, time.Minute)
	r.start(t)
	st := e.waitSettled(t, len(ids), 60*time.Second)
	if st[stalled] != contentindex.StatusFailed {
		t.Errorf("the stalled document is %q, want failed", st[stalled])
	}
	for _, id := range ids[1:] {
		if st[id] != contentindex.StatusClassified {
			t.Errorf("%s is %q, want classified", id, st[id])
		}
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM dead_letter_queue WHERE content_id = $1 AND error_code = 'STALLED' AND max_retries = 0`, stalled); n != 1 {
		t.Errorf("dead-letter entries of the stalled document with STALLED and no retries = %d, want 1", n)
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox WHERE content_id = $1`, stalled); n != 0 {
		t.Errorf("the stalled document was published (%d outbox rows)", n)
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox`); n != len(ids)-1 {
		t.Errorf("outbox rows = %d, want the other %d documents", n, len(ids)-1)
	}
}

// rawIndexOps returns the indexing operations the raw index's primaries
// have performed (index_total of _stats/indexing).
func (e *env) rawIndexOps(t *testing.T) int64 {
	t.Helper()
	index := contentindex.RawIndex(e.source)
	res, err := e.es.Indices.Stats(e.es.Indices.Stats.WithIndex(index), e.es.Indices.Stats.WithMetric("indexing"))
	if err := esclient.CheckResponse("raw index stats", res, err); err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		Indices map[string]struct {
			Primaries struct {
				Indexing struct {
					IndexTotal int64 `json:"index_total"`
				} `json:"indexing"`
			} `json:"primaries"`
		} `json:"indices"`
	}
	if err := decodeJSON(res.Body, &parsed); err != nil {
		t.Fatal(err)
	}
	return parsed.Indices[index].Primaries.Indexing.IndexTotal
}

// A classified document costs its raw index exactly one indexing operation,
// the status flip at the commit point: the claim, its renewals and its
// release are rows of the lease table, not re-indexes of the raw document.
func TestOneRawWritePerClassifiedDocument(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 60)
	before := e.rawIndexOps(t)
	r := e.replica(t, "once", nil, 400*time.Millisecond) // renewals fall due while documents are in flight
	r.start(t)
	st := e.waitSettled(t, len(ids), 60*time.Second)
	for _, id := range ids {
		if st[id] != contentindex.StatusClassified {
			t.Errorf("%s is %q, want classified", id, st[id])
		}
	}
	r.stop(t)
	if ops := e.rawIndexOps(t) - before; ops != int64(len(ids)) {
		t.Errorf("raw index indexing operations = %d for %d classified documents, want exactly one each", ops, len(ids))
	}
}

// A write block set on a raw index after its documents were claimed
// refuses their status flips. Their claims are released at once, not left
// to expire: the documents count no stall and are claimable again as soon
// as the block is lifted, at the version they were found at; each is
// counted in classifier_documents_requeued_total (reason write_blocked).
func TestFlipRefusedByAWriteBlockReleasesTheClaims(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 4)
	ctx := context.Background()
	r := e.replica(t, "blocked", nil, time.Minute)
	results := e.classifyAll(t, ids, nil)
	raws := rawsOf(results)
	if won, err := r.leases.ClaimDocs(ctx, raws, 0); err != nil || len(won) != len(ids) {
		t.Fatalf("claim: %d won, %v", len(won), err)
	}
	e.writeBlock(t, true)
	lifted := false
	t.Cleanup(func() {
		if !lifted {
			e.writeBlock(t, false)
		}
	})

	r.committer.Commit(ctx, results)

	for id, status := range e.statuses(t) {
		if status != contentindex.StatusPending {
			t.Errorf("%s is %q under the write block, want pending", id, status)
		}
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM raw_claims`); n != 0 {
		t.Errorf("%d claims left after the flips were refused by the block, want all released", n)
	}
	if got := e.metric(t, "classifier_documents_requeued_total"); got != float64(len(ids)) {
		t.Errorf("classifier_documents_requeued_total = %v, want %d", got, len(ids))
	}
	e.writeBlock(t, false)
	lifted = true
	other, err := lease.New(lease.Config{DB: e.db, Replica: "other"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := other.ClaimDocs(ctx, raws, 1)
	if err != nil || len(got) != len(ids) {
		t.Fatalf("after the block: %d of %d claimed again, %v", len(got), len(ids), err)
	}
	for _, d := range got {
		if d.Stalled {
			t.Errorf("%s counted a stall for the refused flip", d.ID)
		}
	}
}

// writeBlock sets or lifts index.blocks.write on the raw index.
func (e *env) writeBlock(t *testing.T, on bool) {
	t.Helper()
	res, err := e.es.Indices.PutSettings(strings.NewReader(fmt.Sprintf(`{"index.blocks.write": %t}`, on)),
		e.es.Indices.PutSettings.WithIndex(contentindex.RawIndex(e.source)))
	if err := esclient.CheckResponse("write block", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
}

// rawsOf returns the raw documents of results, at the versions they were
// classified at.
func rawsOf(results []Result) []*domain.RawContent {
	raws := make([]*domain.RawContent, len(results))
	for i := range results {
		raws[i] = results[i].Raw
	}
	return raws
}

// A raw index deleted after its documents were claimed is not created
// again by their status flips (Elasticsearch creates a missing index on an
// update): their claims are released and counted, their classified
// documents and outbox rows stay written, and the documents of another
// index in the same batch flip as usual.
func TestFlipIntoADeletedRawIndexDoesNotCreateItAgain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	healthy := *e
	healthy.source = e.prefix + "_ok"
	goneIDs, keptIDs := e.load(t, 3), healthy.load(t, 4)
	ctx := context.Background()
	r := e.replica(t, "deleted", nil, time.Minute)
	results := append(e.classifyAll(t, goneIDs, nil), healthy.classifyAll(t, keptIDs, nil)...)
	if won, err := r.leases.ClaimDocs(ctx, rawsOf(results), 0); err != nil || len(won) != len(results) {
		t.Fatalf("claim: %d won, %v", len(won), err)
	}
	deleted := contentindex.RawIndex(e.source)
	res, err := e.es.Indices.Delete([]string{deleted})
	if err := esclient.CheckResponse("delete "+deleted, res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	r.committer.Commit(ctx, results)

	if exists, err := r.raw.Exists(ctx, deleted); err != nil || exists {
		t.Errorf("%s exists after the commit (%v): the flips created the deleted index again", deleted, err)
	}
	for id, status := range healthy.statuses(t) {
		if status != contentindex.StatusClassified {
			t.Errorf("%s of the healthy index is %q, want classified", id, status)
		}
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM raw_claims WHERE raw_index = $1`, deleted); n != 0 {
		t.Errorf("%d claims left on the deleted index, want all released", n)
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM raw_claims WHERE done`); n != len(keptIDs) {
		t.Errorf("%d finished claims, want the healthy index's %d", n, len(keptIDs))
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox`); n != len(results) {
		t.Errorf("%d outbox rows, want %d: a document of the deleted index was lost", n, len(results))
	}
	if got := e.metric(t, "classifier_documents_requeued_total"); got != float64(len(goneIDs)) {
		t.Errorf("classifier_documents_requeued_total = %v, want %d", got, len(goneIDs))
	}
}
