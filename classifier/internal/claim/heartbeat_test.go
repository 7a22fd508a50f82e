package claim

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

const replica = "hb-test"

type bundle struct {
	es       *elasticsearch.Client
	index    string
	store    *storage.ContentStore
	registry *Registry
	hb       *Heartbeat
}

// setup returns a heartbeat with interval over a fresh raw index.
func setup(t *testing.T, interval time.Duration) *bundle {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	index := contentindex.RawIndex(prefix + "hb")
	if err := contentindex.CreateIndex(context.Background(), es, index); err != nil {
		t.Fatal(err)
	}
	b := &bundle{es: es, index: index, store: storage.NewContentStore(es), registry: NewRegistry()}
	hb, err := NewHeartbeat(HeartbeatConfig{ReplicaID: replica, IndexPattern: index, Interval: interval}, b.registry, b.store, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.hb = hb
	return b
}

// claimed writes a pending document and claims it for replica at claimedAt.
func (b *bundle) claimed(t *testing.T, id string, claimedAt time.Time) *domain.RawContent {
	t.Helper()
	doc, _ := json.Marshal(map[string]any{"id": id, "url": "https://example.org/" + id, "source_name": "hb", "title": "T",
		"raw_text": "text", "crawled_at": time.Now().UTC(), "classification_status": contentindex.StatusPending})
	res, err := b.es.Index(b.index, bytes.NewReader(doc), b.es.Index.WithDocumentID(id))
	if err := esclient.CheckResponse("index "+id, res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	d := b.current(t, id)
	if won, err := b.store.Claim(context.Background(), replica, []*domain.RawContent{d}, claimedAt.UTC()); err != nil || len(won) != 1 {
		t.Fatalf("claim %s: %d won, %v", id, len(won), err)
	}
	return d
}

// current reads a document as Elasticsearch holds it now.
func (b *bundle) current(t *testing.T, id string) *domain.RawContent {
	t.Helper()
	found, _, err := b.store.GetRaw(context.Background(), []domain.DocKey{{Index: b.index, ID: id}})
	if err != nil || len(found) != 1 {
		t.Fatalf("get %s: %d found, %v", id, len(found), err)
	}
	return found[0]
}

// flip commits d at the version this replica holds and reports whether it
// was accepted.
func (b *bundle) flip(t *testing.T, d *domain.RawContent) error {
	t.Helper()
	items, err := b.store.FlipStatus(context.Background(), []storage.StatusChange{{Raw: d, Status: contentindex.StatusClassified}})
	if err != nil {
		t.Fatal(err)
	}
	return items[0].Err
}

// A claim made less than half an interval ago is not renewed (under a
// drain most claims finish before their first renewal, and cost none); an
// older one is, and the version it gets is the one the commit uses.
func TestHeartbeatRenewsOnlyClaimsThatAreDue(t *testing.T) {
	t.Parallel()
	b := setup(t, 10*time.Second)
	fresh := b.claimed(t, "fresh", time.Now())
	old := b.claimed(t, "old", time.Now().Add(-6*time.Second))
	oldClaimedAt := *old.ClaimedAt
	b.registry.Add(fresh, old)

	b.hb.Renew(context.Background())

	if cur := b.current(t, "fresh"); cur.SeqNo != fresh.SeqNo || !cur.ClaimedAt.Equal(*fresh.ClaimedAt) {
		t.Errorf("fresh claim was renewed: now at seq_no %d claimed_at %s, claimed at %d %s", cur.SeqNo, cur.ClaimedAt, fresh.SeqNo, fresh.ClaimedAt)
	}
	cur := b.current(t, "old")
	if !cur.ClaimedAt.After(oldClaimedAt) || cur.SeqNo != old.SeqNo {
		t.Errorf("old claim: Elasticsearch holds seq_no %d claimed_at %s, the registry %d; want renewed past %s at the version held",
			cur.SeqNo, cur.ClaimedAt, old.SeqNo, oldClaimedAt)
	}
	if n := b.registry.Len(); n != 2 {
		t.Errorf("registry holds %d claims after the renewal, want 2", n)
	}
	b.registry.Take(fresh, old)
	for _, d := range []*domain.RawContent{fresh, old} {
		if err := b.flip(t, d); err != nil {
			t.Errorf("commit of %s at the version held: %v", d.ID, err)
		}
	}
}

// A claim another replica took over (after the lease) is dropped at the
// next renewal: this replica will not commit it.
func TestHeartbeatDropsAClaimTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*time.Second)
	d := b.claimed(t, "taken", time.Now().Add(-time.Minute))
	b.registry.Add(d)
	if won, err := b.store.Claim(context.Background(), "other", []*domain.RawContent{b.current(t, "taken")}, time.Now().UTC()); err != nil || len(won) != 1 {
		t.Fatalf("takeover: %d won, %v", len(won), err)
	}

	b.hb.Renew(context.Background())

	if n := b.registry.Len(); n != 0 {
		t.Errorf("registry holds %d claims, want the one taken over dropped", n)
	}
	if cur := b.current(t, "taken"); cur.ClaimedBy != "other" {
		t.Errorf("document claimed by %q after the renewal, want the new owner kept", cur.ClaimedBy)
	}
}

// A renewal that timed out but went through left the document at a newer
// version than the one held. The next renewal is refused; the heartbeat
// finds its own claim on the document (claimed_by, a later claimed_at),
// adopts the version, and the claim is kept and committed.
func TestHeartbeatAdoptsARenewalThatWentThrough(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*time.Second)
	d := b.claimed(t, "through", time.Now().Add(-time.Minute))
	b.registry.Add(d)
	sent := time.Now().Add(-5 * time.Second).UTC().Truncate(time.Millisecond)
	copyOfD := *d
	if res, err := b.store.Renew(context.Background(), []*domain.RawContent{&copyOfD}, sent); err != nil || res[0].Err != nil {
		t.Fatalf("renewal that went through: %v %v", err, res)
	}

	b.hb.Renew(context.Background())

	if n := b.registry.Len(); n != 1 {
		t.Fatalf("registry holds %d claims, want the claim kept", n)
	}
	cur := b.current(t, "through")
	if d.SeqNo != cur.SeqNo || d.PrimaryTerm != cur.PrimaryTerm {
		t.Errorf("held version %d/%d, Elasticsearch's %d/%d: want the version adopted", d.SeqNo, d.PrimaryTerm, cur.SeqNo, cur.PrimaryTerm)
	}
	b.registry.Take(d)
	if err := b.flip(t, d); err != nil {
		t.Errorf("commit after adopting the version: %v", err)
	}
}

// A renewal takes only the claims that are due, and the registry stays open
// while it is in flight: Add and Take of other claims do not wait for it.
func TestRegistryStaysOpenDuringARenewal(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	old, recent := time.Now().Add(-time.Minute), time.Now()
	due, notDue := &domain.RawContent{}, &domain.RawContent{}
	due.ClaimedAt, notDue.ClaimedAt = &old, &recent
	r.Add(due, notDue)
	rn := r.begin(time.Now().Add(-time.Second))
	if len(rn.docs) != 1 || rn.docs[0] != due {
		t.Fatalf("renewal carries %v, want the one due claim", rn.docs)
	}
	if again := r.begin(time.Now()); len(again.docs) != 1 || again.docs[0] != notDue {
		t.Fatalf("a second renewal carries %v, want only the claim not already in flight", again.docs)
	}
	other := &domain.RawContent{}
	r.Add(other) // would wait forever if a renewal held the registry
	r.Take(other)
	r.end(rn, map[*domain.RawContent]time.Time{due: time.Now()}, nil)
	r.end(renewal{docs: []*domain.RawContent{notDue}}, nil, nil)
	r.Take(due, notDue)
	if n := r.Len(); n != 0 {
		t.Errorf("registry holds %d, want none", n)
	}
}

// A renewal refused because the document went on to another replica drops
// the claim even when an earlier renewal's answer was lost: only a document
// still carrying this replica's claimed_by is kept.
func TestHeartbeatDropsATakeoverAfterALostRenewal(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*time.Second)
	d := b.claimed(t, "lost-then-taken", time.Now().Add(-time.Minute))
	b.registry.Add(d)
	renewed := *d
	if res, err := b.store.Renew(context.Background(), []*domain.RawContent{&renewed}, time.Now().UTC()); err != nil || res[0].Err != nil {
		t.Fatalf("renewal whose answer was lost: %v %v", err, res)
	}
	later := time.Now().Add(time.Minute).UTC() // even a later claimed_at is not ours under another id
	if won, err := b.store.Claim(context.Background(), "other", []*domain.RawContent{b.current(t, "lost-then-taken")}, later); err != nil || len(won) != 1 {
		t.Fatalf("takeover: %d won, %v", len(won), err)
	}

	b.hb.Renew(context.Background())

	if n := b.registry.Len(); n != 0 {
		t.Errorf("registry holds %d claims, want the one taken over dropped", n)
	}
}

// sink is a work queue with room, never throttled itself.
type sink struct{}

func (sink) Submit(context.Context, *domain.RawContent) error { return nil }
func (sink) ShouldThrottle() bool                             { return false }
func (sink) FreeSlots() int                                   { return 100 }

// The poller is held off while the median claim in flight is older than
// the pace, and not for one old claim among fresh ones.
func TestTrackingSinkPacesOnTheMedianClaimAge(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	now := time.Now()
	r.now = func() time.Time { return now }
	ts := TrackingSink{Sink: sink{}, Registry: r, Pace: time.Second}
	ctx := context.Background()
	if ts.ShouldThrottle() {
		t.Fatal("throttled with no claim in flight")
	}
	old := &domain.RawContent{}
	if err := ts.Submit(ctx, old); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	for range 2 {
		if err := ts.Submit(ctx, &domain.RawContent{}); err != nil {
			t.Fatal(err)
		}
	}
	if ts.ShouldThrottle() {
		t.Error("throttled by one old claim among two fresh ones")
	}
	now = now.Add(2 * time.Second)
	if !ts.ShouldThrottle() {
		t.Error("not throttled with every claim in flight older than the pace")
	}
	if (TrackingSink{Sink: sink{}, Registry: r, Pace: -1}).ShouldThrottle() {
		t.Error("throttled with pacing off")
	}
}
