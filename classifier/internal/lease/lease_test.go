package lease_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/infrastructure/postgres/postgrestest"
)

func setup(t *testing.T) (*sql.DB, func(replica string) *lease.Store) {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	return db, func(replica string) *lease.Store {
		s, err := lease.New(lease.Config{DB: db, Replica: replica})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// expire ends the lease of every claim of doc, as if its owner had stopped
// renewing it for a whole lease.
func expire(t *testing.T, db *sql.DB, id string) {
	t.Helper()
	if _, err := db.Exec(`UPDATE raw_claims SET lease_until = now() - interval '1 second' WHERE doc_id = $1`, id); err != nil {
		t.Fatal(err)
	}
}

func docs(ids ...string) []lease.Doc {
	out := make([]lease.Doc, len(ids))
	for i, id := range ids {
		out[i] = lease.Doc{Index: "news_raw_content", ID: id, SeqNo: int64(10 + i), PrimaryTerm: 1}
	}
	return out
}

func ids(cs []lease.Claim) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ClaimID
	}
	return out
}

func TestClaimConflictAndTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, store := setup(t)
	a, b := store("a"), store("b")

	won, err := a.Claim(ctx, docs("1", "2", "2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(won) != 2 || won[0].SeqNo != 10 || won[0].Stalls != 0 {
		t.Fatalf("a won %+v, want documents 1 and 2 once each at the searched version", won)
	}
	// A live lease keeps b away.
	if got, err := b.Claim(ctx, docs("1", "2", "3")); err != nil || len(got) != 1 || got[0].ID != "3" {
		t.Fatalf("b won %+v (%v), want only document 3", got, err)
	}
	live, err := a.Live(ctx, []string{"news_raw_content", "other"})
	if err != nil || len(live["news_raw_content"]) != 3 {
		t.Fatalf("live %v (%v), want 3 documents", live, err)
	}

	// Document 1's lease expires: b takes it over, which counts a stall and
	// takes the claim from a.
	expire(t, db, "1")
	got, err := b.Claim(ctx, []lease.Doc{{Index: "news_raw_content", ID: "1", SeqNo: 42, PrimaryTerm: 2}})
	if err != nil || len(got) != 1 {
		t.Fatalf("takeover %+v (%v)", got, err)
	}
	if got[0].Stalls != 1 || got[0].SeqNo != 42 || got[0].PrimaryTerm != 2 || got[0].ClaimID == won[0].ClaimID {
		t.Fatalf("takeover %+v, want 1 stall, the new version and a new claim id (old %d)", got[0], won[0].ClaimID)
	}
	held, err := a.Renew(ctx, ids(won))
	if err != nil {
		t.Fatal(err)
	}
	if held[won[0].ClaimID] || !held[won[1].ClaimID] {
		t.Fatalf("a's renewal held %v: the claim taken over must be lost, the other kept", held)
	}
	// The zombie cannot release or finish what b holds now.
	if n, err := a.Release(ctx, ids(won[:1])); err != nil || n != 0 {
		t.Fatalf("zombie release removed %d (%v)", n, err)
	}
	if held, _ := b.Renew(ctx, ids(got)); !held[got[0].ClaimID] {
		t.Fatal("b lost its claim to a zombie's release")
	}

	// Stalls accumulate over takeovers, and a finished claim starts afresh.
	expire(t, db, "1")
	again, err := a.Claim(ctx, docs("1"))
	if err != nil || len(again) != 1 || again[0].Stalls != 2 {
		t.Fatalf("second takeover %+v (%v), want 2 stalls", again, err)
	}
	if err := a.Finish(ctx, ids(again)); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Claim(ctx, docs("1")); len(got) != 0 {
		t.Fatalf("a finished claim was taken within its hold at its own version (a stale search): %+v", got)
	}
	if held, _ := a.Renew(ctx, ids(again)); held[again[0].ClaimID] {
		t.Fatal("a finished claim was renewed")
	}
	// Past the hold, a search that has not seen the flip still cannot
	// claim the finished version; the document read after its flip (a
	// newer version) is claimable at once, without a stall.
	expire(t, db, "1")
	if got, _ := b.Claim(ctx, docs("1")); len(got) != 0 {
		t.Fatalf("a finished claim was taken at its own version after its hold: %+v", got)
	}
	if got, _ := b.Claim(ctx, []lease.Doc{{Index: "news_raw_content", ID: "1", SeqNo: 11, PrimaryTerm: 1}}); len(got) != 1 || got[0].Stalls != 0 {
		t.Fatalf("claim of a newer version after a finished one %+v, want won with 0 stalls", got)
	}
	if n, err := a.Sweep(ctx, 100); err != nil || n != 0 {
		t.Fatalf("sweep removed %d (%v); the row was claimed again", n, err)
	}
}

func TestReleaseAndStartUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, store := setup(t)
	a, b := store("a"), store("b")
	won, err := a.Claim(ctx, docs("1", "2", "3"))
	if err != nil || len(won) != 3 {
		t.Fatalf("claim %+v (%v)", won, err)
	}
	if _, err := b.Claim(ctx, docs("4")); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Release(ctx, ids(won[:1])); err != nil || n != 1 {
		t.Fatalf("release %d (%v)", n, err)
	}
	if got, _ := b.Claim(ctx, docs("1")); len(got) != 1 || got[0].Stalls != 0 {
		t.Fatalf("a released document was not claimable at once without a stall: %+v", got)
	}
	counts, err := lease.Processing(ctx, db)
	if err != nil || counts["news_raw_content"] != 4 {
		t.Fatalf("processing %v (%v), want 4", counts, err)
	}

	// A restart of a with the same id drops its previous run's claims only.
	if n, err := store("a").ReleaseAll(ctx); err != nil || n != 2 {
		t.Fatalf("start-up release %d (%v), want 2", n, err)
	}
	if got, _ := b.Claim(ctx, docs("2", "3")); len(got) != 2 {
		t.Fatalf("documents of a's previous run not claimable: %+v", got)
	}
	if held, _ := b.Renew(ctx, []int64{0}); len(held) != 0 {
		t.Fatal("renewed a claim that does not exist")
	}

	// Finished rows past their hold are swept.
	var bIDs []int64
	rows := postgrestest.Strings(t, db, `SELECT claim_id::text FROM raw_claims WHERE claimed_by = 'b'`)
	for _, r := range rows {
		id, err := strconv.ParseInt(r, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		bIDs = append(bIDs, id)
	}
	if err := b.Finish(ctx, bIDs); err != nil {
		t.Fatal(err)
	}
	if counts, _ := lease.Processing(ctx, db); counts["news_raw_content"] != 0 {
		t.Fatalf("finished claims counted as processing: %v", counts)
	}
	if n, err := b.Sweep(ctx, 100); err != nil || n != 0 {
		t.Fatalf("swept %d (%v) within Keep, want none", n, err)
	}
	if _, err := db.Exec(`UPDATE raw_claims SET lease_until = now() - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Sweep(ctx, 100); err != nil || n != int64(len(bIDs)) {
		t.Fatalf("swept %d (%v), want %d", n, err, len(bIDs))
	}
}

// Ids Postgres text cannot hold (NUL bytes, which Elasticsearch ids may
// carry) do not fail the batch's claim: they are claimed under the id
// without them, two such twins as one document.
func TestNULIdsDoNotFailTheClaim(t *testing.T) {
	t.Parallel()
	_, store := setup(t)
	a := store("a")
	won, err := a.Claim(context.Background(), docs("poi\x00son", "poison\x00", "ok"))
	if err != nil || len(won) != 2 {
		t.Fatalf("claim %+v (%v), want the twins once and ok", won, err)
	}
}

// at returns doc id of news_raw_content in the incarnation uuid at seqNo.
func at(uuid, id string, seqNo int64) []lease.Doc {
	return []lease.Doc{{Index: "news_raw_content", IndexUUID: uuid, ID: id, SeqNo: seqNo, PrimaryTerm: 1}}
}

// An index deleted and created again under its name numbers its documents
// afresh: the new incarnation's documents are claimed as new ones, whatever
// the old rows' versions and leases, and the old owner loses its claim.
func TestRecreatedIndexClaimsAsNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, store := setup(t)
	a, b := store("a"), store("b")

	// In the old incarnation, document 1 was classified at seq 40 and
	// document 2 is being classified by a at seq 41.
	done, err := a.Claim(ctx, at("old", "1", 40))
	if err != nil || len(done) != 1 {
		t.Fatalf("claim %+v (%v)", done, err)
	}
	if err := a.Finish(ctx, ids(done)); err != nil {
		t.Fatal(err)
	}
	inFlight, err := a.Claim(ctx, at("old", "2", 41))
	if err != nil || len(inFlight) != 1 {
		t.Fatalf("claim %+v (%v)", inFlight, err)
	}
	// The same incarnation still refuses the finished version and the live lease.
	if got, _ := b.Claim(ctx, append(at("old", "1", 40), at("old", "2", 41)...)); len(got) != 0 {
		t.Fatalf("same incarnation won %+v", got)
	}

	// The index is recreated: its documents 1 and 2 are at seq 0 and 1.
	got, err := b.Claim(ctx, append(at("new", "1", 0), at("new", "2", 1)...))
	if err != nil || len(got) != 2 {
		t.Fatalf("new incarnation won %+v (%v), want both documents", got, err)
	}
	for _, c := range got {
		if c.Stalls != 0 || c.IndexUUID != "new" {
			t.Fatalf("claim %+v, want no stall and the new incarnation", c)
		}
	}
	if held, _ := a.Renew(ctx, ids(inFlight)); held[inFlight[0].ClaimID] {
		t.Fatal("the old incarnation's claim is still held: its owner would commit a document of a deleted index")
	}
	// A claimer that does not know the incarnation compares versions.
	if err := b.Finish(ctx, ids(got)); err != nil {
		t.Fatal(err)
	}
	if won, _ := a.Claim(ctx, at("", "1", 0)); len(won) != 0 {
		t.Fatalf("a claim without an incarnation won a finished version: %+v", won)
	}
}

// Forget drops the claims of an incarnation the poller saw replaced, and
// every claim of a deleted index; other indices keep theirs.
func TestForgetDropsTheOldIncarnation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, store := setup(t)
	a := store("a")
	other := []lease.Doc{{Index: "other_raw_content", IndexUUID: "x", ID: "9", SeqNo: 1, PrimaryTerm: 1}}
	for _, d := range [][]lease.Doc{at("old", "1", 4), at("new", "2", 0), other} {
		if won, err := a.Claim(ctx, d); err != nil || len(won) != 1 {
			t.Fatalf("claim %+v (%v)", won, err)
		}
	}
	if n, err := a.Forget(ctx, "news_raw_content", "new"); err != nil || n != 1 {
		t.Fatalf("forget the old incarnation: %d (%v), want 1", n, err)
	}
	if n, err := a.Forget(ctx, "news_raw_content", ""); err != nil || n != 1 {
		t.Fatalf("forget a deleted index: %d (%v), want 1", n, err)
	}
	if left := postgrestest.Strings(t, db, `SELECT raw_index || '/' || doc_id FROM raw_claims`); len(left) != 1 || left[0] != "other_raw_content/9" {
		t.Fatalf("rows left %v, want only the other index's", left)
	}
}
