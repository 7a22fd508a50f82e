package claim

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
)

const replica = "hb-test"

type bundle struct {
	db       *sql.DB
	leases   *lease.Store
	registry *Registry
	hb       *Heartbeat
}

// setup returns a heartbeat with interval over a fresh classifier database.
func setup(t *testing.T, interval time.Duration) *bundle {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	leases, err := lease.New(lease.Config{DB: db, Replica: replica, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{db: db, leases: leases, registry: NewRegistry()}
	hb, err := NewHeartbeat(HeartbeatConfig{ReplicaID: replica, Interval: interval}, b.registry, leases, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.hb = hb
	return b
}

// claimed claims n documents for replica and tracks them.
func (b *bundle) claimed(t *testing.T, n int) []*domain.RawContent {
	t.Helper()
	docs := make([]*domain.RawContent, n)
	for i := range docs {
		docs[i] = &domain.RawContent{Index: "hb_raw_content", SeqNo: 1, PrimaryTerm: 1}
		docs[i].ID = fmt.Sprint(i)
	}
	won, err := b.leases.ClaimDocs(context.Background(), docs, 0)
	if err != nil || len(won) != n {
		t.Fatalf("claim: %d won, %v", len(won), err)
	}
	b.registry.Add(won...)
	return won
}

func (b *bundle) leaseUntil(t *testing.T, d *domain.RawContent) time.Time {
	t.Helper()
	var until time.Time
	if err := b.db.QueryRow(`SELECT lease_until FROM raw_claims WHERE claim_id = $1`, d.Lease).Scan(&until); err != nil {
		t.Fatal(err)
	}
	return until
}

// A beat renews the claims that are due in the lease table; a claim taken
// over by another replica (its lease expired first) is dropped and not
// renewed again.
func TestHeartbeatRenewsAndDropsClaimsTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t, 20*time.Millisecond)
	ctx := context.Background()
	docs := b.claimed(t, 2)
	before := b.leaseUntil(t, docs[0])
	if _, err := b.db.Exec(`UPDATE raw_claims SET lease_until = now() - interval '1 second' WHERE claim_id = $1`, docs[1].Lease); err != nil {
		t.Fatal(err)
	}
	other, err := lease.New(lease.Config{DB: b.db, Replica: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if won, err := other.Claim(ctx, []lease.Doc{{Index: docs[1].Index, ID: docs[1].ID, SeqNo: 1, PrimaryTerm: 1}}); err != nil || len(won) != 1 {
		t.Fatalf("takeover: %v %v", won, err)
	}
	time.Sleep(30 * time.Millisecond) // the claims become due (half an interval old)
	b.hb.Renew(ctx)
	if !b.leaseUntil(t, docs[0]).After(before) {
		t.Error("the held claim's lease did not move forward")
	}
	b.registry.mu.Lock()
	_, tracked := b.registry.docs[docs[1]]
	b.registry.mu.Unlock()
	if tracked {
		t.Error("the claim taken over is still tracked (and would be renewed)")
	}
	if b.registry.Len() != 1 {
		t.Errorf("registry holds %d claims, want 1", b.registry.Len())
	}
}

// Stop releases the claims still tracked; Start releases those a previous
// run of the same replica left behind.
func TestHeartbeatReleasesAtStopAndStart(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Hour)
	ctx := context.Background()
	b.claimed(t, 3)
	if err := b.hb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, b.db); n != 0 {
		t.Fatalf("%d claims of a previous run left at start", n)
	}
	b.claimed(t, 2)
	if err := b.hb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, b.db); n != 0 {
		t.Fatalf("%d claims left at stop", n)
	}
}

func count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM raw_claims`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

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

// The heartbeat keeps the start/stop contract while it renews and releases
// claims (run with -race).
func TestHeartbeatStartStopStress(t *testing.T) {
	t.Parallel()
	b := setup(t, 10*time.Millisecond)
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		registry := NewRegistry()
		hb, err := NewHeartbeat(HeartbeatConfig{ReplicaID: replica, Interval: 10 * time.Millisecond}, registry, b.leases, testenv.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		won, err := b.leases.Claim(context.Background(), []lease.Doc{{Index: "stress_raw_content", ID: fmt.Sprint(time.Now().UnixNano()), SeqNo: 1, PrimaryTerm: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range won {
			registry.Add(&domain.RawContent{Index: c.Index, Lease: c.ClaimID})
		}
		return hb
	})
}
