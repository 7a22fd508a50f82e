package processor

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

// classifyAll claims and classifies ids with the test pipeline, as the
// workers would, and returns their results.
func (e *env) classifyAll(t *testing.T, ids []string, mutate func(i int, r *Result)) []Result {
	t.Helper()
	// Read at their current versions and not claimed (no lease): the
	// committer's ownership check leaves such results to the flip.
	claimed := e.rawDocs(t, ids)
	p, _ := pipeline.New(pipeline.Config{Topics: e.engine})
	results := make([]Result, len(claimed))
	for i, raw := range claimed {
		doc, err := p.Classify(raw)
		if err != nil {
			t.Fatal(err)
		}
		results[i] = Result{Raw: raw, Doc: doc}
		if mutate != nil {
			mutate(i, &results[i])
		}
	}
	return results
}

// A batched write that Postgres refuses because of one row (a NUL byte, a
// value longer than its column) no longer fails the batch: the row is
// isolated by splitting, dead-lettered alone with its own error, and the
// other rows of the batch are committed.
func TestBadRowsAreIsolatedFromTheirBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 200)
	r := e.replica(t, "iso", nil, time.Minute)
	results := e.classifyAll(t, ids, func(i int, r *Result) {
		switch i {
		case 17: // refused by the outbox: invalid byte sequence 0x00
			r.Doc.Title = "poisoned \x00 title"
		case 101: // refused by history and outbox: longer than VARCHAR(255)
			r.Doc.SourceName = strings.Repeat("s", 300)
		}
	})
	r.committer.Commit(context.Background(), results)

	st := e.statuses(t)
	for i, id := range ids {
		want := contentindex.StatusClassified
		if i == 17 || i == 101 {
			want = contentindex.StatusFailed
		}
		if st[id] != want {
			t.Errorf("document %d (%s) is %q, want %q", i, id, st[id], want)
		}
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox`); n != 198 {
		t.Errorf("outbox rows = %d, want 198", n)
	}
	rows, err := e.db.Query(`SELECT content_id, error_code, max_retries, error_message FROM dead_letter_queue ORDER BY content_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var id, code, msg string
		var maxRetries int
		if err := rows.Scan(&id, &code, &maxRetries, &msg); err != nil {
			t.Fatal(err)
		}
		got[id] = code
		if code != string(domain.ErrorCodeValidation) || maxRetries != 0 {
			t.Errorf("DLQ %s: %s with %d retries (%s), want VALIDATION_ERROR with none", id, code, maxRetries, msg)
		}
	}
	if len(got) != 2 || got[ids[17]] == "" || got[ids[101]] == "" {
		t.Errorf("DLQ = %v, want exactly documents 17 and 101", got)
	}
}

// relay forwards TCP connections to a target until it is cut: an outage of
// the service behind it, as its clients see one (connections refused).
type relay struct {
	target string
	mu     sync.Mutex
	ln     net.Listener
	addr   string
	conns  []net.Conn
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	r := &relay{target: target}
	if err := r.open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cut)
	return r
}

func (r *relay) open(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.ln, r.addr = ln, ln.Addr().String()
	r.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", r.target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, u)
			r.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return nil
}

func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

func (r *relay) restore(t *testing.T) {
	t.Helper()
	if err := r.open(r.addr); err != nil {
		t.Fatal(err)
	}
}

// An outage of the publisher's database while documents are committed
// spends no retry and makes no dead letter: the outbox breaker opens, the
// committer holds its batch and the poller stops claiming; when the
// database answers again every document is committed.
func TestOutboxOutageHoldsTheBatchAndChargesNoRetry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 120)

	// The replica reaches the outbox database through a relay we can cut.
	u, err := url.Parse(testenv.Env(t, "POSTGRES_ADMIN_URL", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	rl := newRelay(t, u.Host)
	outboxURL := strings.Replace(e.outboxDSN, u.Host, rl.addr, 1)
	outboxDB, err := postgres.Open(context.Background(), postgres.Config{URL: outboxURL}, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outboxDB.Close() })
	outboxDB.SetMaxIdleConns(0) // every statement dials, so a cut is seen at once

	rl.cut()
	r := e.replica(t, "outage", nil, 2*time.Second)
	r.committer.outbox.store = storage.NewOutboxWriter(outboxDB, testenv.Logger(t))
	r.start(t)

	// During the outage: the breaker opens, nothing is dead-lettered.
	testenv.WaitFor(t, 20*time.Second, 20*time.Millisecond, "the outbox breaker to open during the outage", func() bool { return !r.breakers.Outbox.Closed() })
	time.Sleep(3 * time.Second) // longer than the lease: held claims are renewed
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM dead_letter_queue`); n != 0 {
		t.Fatalf("dead letters during the outage = %d, want 0", n)
	}
	if got := e.metric(t, "classifier_documents_failed_total"); got != 0 {
		t.Errorf("documents failed during the outage = %v, want 0", got)
	}

	rl.restore(t)
	st := e.waitSettled(t, len(ids), 60*time.Second)
	for _, id := range ids {
		if st[id] != contentindex.StatusClassified {
			t.Errorf("%s is %q, want classified", id, st[id])
		}
	}
	if n := e.count(t, e.outbox, `SELECT COUNT(*) FROM classified_outbox`); n != len(ids) {
		t.Errorf("outbox rows = %d, want %d", n, len(ids))
	}
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM dead_letter_queue`); n != 0 {
		t.Errorf("dead letters after recovery = %d, want 0", n)
	}
}

// slow is a pipeline that takes d per document.
type slow struct {
	d     time.Duration
	inner Pipeline
}

func (s slow) Classify(raw *domain.RawContent) (*domain.ClassifiedContent, error) {
	time.Sleep(s.d)
	return s.inner.Classify(raw)
}

// Leases are short so a dead replica's documents flow again in seconds, and
// the heartbeat keeps a live replica's claims: a batch that takes several
// leases to classify is never taken over by the other replica, so every
// document is classified exactly once.
func TestHeartbeatKeepsSlowClaimsFromTakeover(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 40)
	p, _ := pipeline.New(pipeline.Config{Topics: e.engine})
	// Each replica needs about 25 seconds for its share (20 documents, four
	// at a time, 5 s each): two and a half leases, which only the heartbeat
	// can bridge. The heartbeat beats every quarter lease (2.5 s), so a
	// renewal may be 7.5 s late before a claim lapses: on a loaded machine a
	// 3 s lease with 2 s of slack was outrun (54 classifications for 40).
	const lease = 10 * time.Second
	a := e.replica(t, "slow-a", slow{d: 5 * time.Second, inner: p}, lease)
	b := e.replica(t, "slow-b", slow{d: 5 * time.Second, inner: p}, lease)
	a.start(t)
	b.start(t)
	e.waitSettled(t, len(ids), 3*time.Minute)
	if n := e.count(t, e.db, `SELECT COUNT(*) FROM classification_history`); n != len(ids) {
		t.Errorf("classifications = %d for %d documents, want each classified once (no takeover of live claims)", n, len(ids))
	}
}

// A replica restarted under the same (stable) CLASSIFIER_ID releases the
// claims its previous run left behind at start, so they flow again at once
// instead of after the lease.
func TestStableReplicaReleasesItsLeftoverClaimsAtStart(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.load(t, 30)
	// The previous run claimed them a moment ago, for a long lease, and
	// was killed.
	previous, err := lease.New(lease.Config{DB: e.db, Replica: "stable", Lease: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if won, err := previous.ClaimDocs(context.Background(), e.rawDocs(t, ids), 0); err != nil || len(won) != len(ids) {
		t.Fatalf("claim: %d won, %v", len(won), err)
	}
	start := time.Now()
	r := e.replica(t, "stable", nil, 10*time.Minute) // only the release can free them in time
	r.start(t)
	e.waitSettled(t, len(ids), 60*time.Second)
	t.Logf("leftover claims classified %s after the restart", time.Since(start).Round(time.Millisecond))
}
