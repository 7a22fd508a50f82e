package lease_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/lease"
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
	rows := dbtest.Strings(t, db, `SELECT claim_id::text FROM raw_claims WHERE claimed_by = 'b'`)
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
