package poller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/infrastructure/esclient"
)

// A raw index deleted and created again under its name, with the ids of the
// old one (a crawler's re-run, an operator's delete and create), starts its
// versions afresh: its documents are claimed as new ones at once, not held
// back by the old incarnation's finished claims (nor left out of the
// searches by their hold), and a claim still in flight on the old
// incarnation is lost, so its owner commits nothing. Another index's claims
// are untouched.
func TestRecreatedIndexIsClaimedAsNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	idx := h.rawIndex(t, "reborn", false)
	other := h.rawIndex(t, "steady", false)
	base := time.Now().Add(-time.Hour)
	ids := h.addDocs(t, idx, "r", 6, base)
	h.addDocs(t, other, "s", 1, base)

	// IndexRefresh of a nanosecond: every poll lists the indices afresh.
	p := h.poller(t, Config{IndexPattern: h.prefix + "*_raw_content", BatchSize: 20, IndexRefresh: time.Nanosecond})
	if n, err := p.PollOnce(ctx); err != nil || n != 7 {
		t.Fatalf("first poll won %d (%v), want 7", n, err)
	}
	first := h.sink.docs
	var oldUUID string
	var finished []*domain.RawContent
	var otherClaim int64
	for _, d := range first {
		switch {
		case d.Index == other:
			otherClaim = d.Lease
		case d.IndexUUID == "":
			t.Fatalf("document %s claimed without its index's incarnation", d.ID)
		default:
			oldUUID = d.IndexUUID
			finished = append(finished, d)
		}
	}
	// Five are committed; the sixth is still being classified by another
	// replica, which took it over after this one's lease ended.
	if err := p.cfg.Leases.Finish(ctx, lease.ClaimIDs(finished[:5])); err != nil {
		t.Fatal(err)
	}
	zombie := h.leases(t, "zombie")
	if _, err := h.db.Exec(`UPDATE raw_claims SET lease_until = now() - interval '1 second' WHERE claim_id = $1`, finished[5].Lease); err != nil {
		t.Fatal(err)
	}
	held, err := zombie.ClaimDocs(ctx, []*domain.RawContent{finished[5]}, 0)
	if err != nil || len(held) != 1 {
		t.Fatalf("zombie's takeover %v (%v)", held, err)
	}

	// Deleted and created again with the same ids, at the versions of the
	// first incarnation's.
	res, err := h.es.Indices.Delete([]string{idx})
	if err := esclient.CheckResponse("delete "+idx, res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	h.rawIndex(t, "reborn", false)
	h.addDocs(t, idx, "r", 6, base)

	h.sink.docs = nil
	if n, err := p.PollOnce(ctx); err != nil || n != 6 {
		t.Fatalf("poll of the recreated index won %d (%v), want its 6 documents", n, err)
	}
	if got := h.sink.keys(); !slices.Equal(got, ids) {
		t.Fatalf("claimed %v, want %v", got, ids)
	}
	for _, d := range h.sink.docs {
		if d.IndexUUID == oldUUID || d.Stalled {
			t.Fatalf("document %s claimed in the old incarnation (%s) or as stalled", d.ID, d.IndexUUID)
		}
	}
	if still, _ := zombie.Renew(ctx, []int64{held[0].Lease}); still[held[0].Lease] {
		t.Fatal("a claim on the deleted incarnation is still held: its owner would commit it")
	}
	if still, _ := p.cfg.Leases.Renew(ctx, []int64{otherClaim}); !still[otherClaim] {
		t.Fatal("another index's claim was forgotten")
	}
}
