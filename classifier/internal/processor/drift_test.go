package processor

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/contentindex"
)

// A renewal whose answer was lost (a timeout) still moved the document to a
// newer version than the one the committer holds: its flip is refused as a
// conflict. The committer sees the document still carries this replica's
// claim and flips it at its current version. A document another replica
// took over in the meantime is left to the new owner.
func TestFlipAfterOwnLostRenewalButNotAfterTakeover(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 4)
	r := e.replica(t, "drift", nil, time.Minute)
	results := e.classifyAll(t, ids, nil)
	ctx := context.Background()
	store := storage.NewContentStore(e.es)

	for _, res := range results[:2] { // renewed; the answer never came back
		renewed := *res.Raw
		if items, err := store.Renew(ctx, []*domain.RawContent{&renewed}, time.Now().UTC()); err != nil || items[0].Err != nil {
			t.Fatalf("renew %s: %v %v", res.Raw.ID, err, items)
		}
	}
	if won, err := store.Claim(ctx, "other", e.rawDocs(t, ids[2:3]), time.Now().UTC()); err != nil || len(won) != 1 {
		t.Fatalf("takeover of %s: %d won, %v", ids[2], len(won), err)
	}

	r.committer.Commit(ctx, results)

	st := e.statuses(t)
	for i, id := range ids {
		want := contentindex.StatusClassified
		if i == 2 {
			want = contentindex.StatusProcessing
		}
		if st[id] != want {
			t.Errorf("document %d (%s) is %q, want %q", i, id, st[id], want)
		}
	}
	if got := e.rawDocs(t, ids[2:3])[0].ClaimedBy; got != "other" {
		t.Errorf("taken-over document claimed by %q, want the new owner's claim kept", got)
	}
}
