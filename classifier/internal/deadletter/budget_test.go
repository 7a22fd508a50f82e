package deadletter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// collectSink is a work queue with room for slots documents that records
// what it is given.
type collectSink struct {
	slots int
	mu    sync.Mutex
	got   []*domain.RawContent
}

func (s *collectSink) Submit(_ context.Context, d *domain.RawContent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, d)
	return nil
}
func (s *collectSink) ShouldThrottle() bool { return false }
func (s *collectSink) FreeSlots() int       { return s.slots }

// take returns and forgets what was submitted, counted by source.
func (s *collectSink) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, d := range s.got {
		out[d.SourceName]++
	}
	s.got = nil
	return out
}

// deadLetter writes n failed raw documents of source into its raw index
// and records each in the queue, due since age ago.
func deadLetter(t *testing.T, q *queue, es *esclient.Client, source string, n int, age time.Duration) {
	t.Helper()
	index := contentindex.RawIndex(source)
	docs := make([]contentindex.RawDocument, n)
	failures := make([]domain.DeadLetterEntry, n)
	for i := range docs {
		id := fmt.Sprintf("%s-%03d", source, i)
		docs[i] = rawtest.Doc(source, id, time.Now().Add(-time.Hour))
		docs[i].ClassificationStatus = contentindex.StatusFailed
		failures[i] = domain.DeadLetterEntry{ContentID: id, SourceName: source, IndexName: index, ErrorCode: domain.ErrorCodeRulePanic, ErrorMessage: "boom"}
	}
	rawtest.Write(t, es, index, docs...)
	if _, err := q.repo.EnqueueBatch(context.Background(), failures); err != nil {
		t.Fatal(err)
	}
	if _, err := q.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() - make_interval(secs => $2) WHERE source_name = $1`,
		source, age.Seconds()); err != nil {
		t.Fatal(err)
	}
}

// One source flooding the queue cannot take the retries of the others: with
// a budget of 4 per window, a source with 20 older due entries gets 4
// retries, a healthy source's 2 newer entries are both retried, and the
// flood's other 16 wait for the next window (their next_retry_at says so,
// a metric counts them). In the next claim the healthy source is retried
// again and the flood is not.
func TestOneFloodingSourceCannotStarveTheOthers(t *testing.T) {
	t.Parallel()
	q := setupQueue(t, deadletter.RepositoryConfig{})
	es, prefix := testenv.Elasticsearch(t)
	flood, healthy := prefix+"flood", prefix+"healthy"
	deadLetter(t, q, es, flood, 20, time.Hour)
	deadLetter(t, q, es, healthy, 2, time.Minute)

	sink := &collectSink{slots: 10}
	leases := leasesFor(t, "r1")
	w, err := deadletter.NewRetryWorker(deadletter.RetryConfig{ReplicaID: "r1", Batch: 10, SourceBudget: 4, BudgetWindow: time.Hour, Leases: leases},
		q.repo, rawtest.Store(t, es), sink, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := sink.take()
	if n != 6 || got[flood] != 4 || got[healthy] != 2 {
		t.Fatalf("first run submitted %d: %v; want the flood's budget of 4 and the healthy source's 2", n, got)
	}

	// The flood's 4 retried entries are leased; the other 16 wait until
	// the next window, which starts on the next whole hour.
	var inWindow, due int
	if err := q.db.QueryRow(`SELECT COUNT(*) FILTER (WHERE next_retry_at = date_trunc('hour', NOW()) + INTERVAL '1 hour'),
		COUNT(*) FILTER (WHERE next_retry_at <= NOW()) FROM dead_letter_queue WHERE source_name = $1`, flood).Scan(&inWindow, &due); err != nil {
		t.Fatal(err)
	}
	if inWindow != 16 || due != 0 {
		t.Fatalf("flood entries waiting for the next window = %d, due now = %d; want 16 and 0", inWindow, due)
	}
	if d := q.counter(t, "classifier_dlq_retries_deferred_total", attribute.String("source", flood)); d != 16 {
		t.Errorf("classifier_dlq_retries_deferred_total{source=flood} = %d, want 16", d)
	}
	if c := q.counter(t, "classifier_dlq_retry_claims_total", attribute.String("source", healthy)); c != 2 {
		t.Errorf("classifier_dlq_retry_claims_total{source=healthy} = %d, want 2", c)
	}

	// Time passes: every entry is due again, the flood's first; the
	// window has not ended, so only the healthy source, with 2 of its 4
	// retries left, is retried.
	if _, err := q.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() - CASE WHEN source_name = $1 THEN INTERVAL '1 hour' ELSE INTERVAL '1 second' END`, flood); err != nil {
		t.Fatal(err)
	}
	// The first run's documents were finished: their claims are gone.
	if _, err := leases.ReleaseAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sink.take(); got[flood] != 0 || got[healthy] != 2 {
		t.Fatalf("second run submitted %v; want the healthy source's 2 and none of the flood's", got)
	}
}

// The budget is per source and per window: a new window gives a source its
// whole budget back, and entries are taken in turns across sources, so a
// batch smaller than the due entries still reaches every source.
func TestClaimTakesTurnsAcrossSourcesAndRenewsTheBudget(t *testing.T) {
	t.Parallel()
	q := setupQueue(t, deadletter.RepositoryConfig{})
	ctx := context.Background()
	var failures []domain.DeadLetterEntry
	for _, src := range []string{"a", "b", "c"} {
		for i := range 5 {
			failures = append(failures, domain.DeadLetterEntry{ContentID: fmt.Sprintf("%s-%d", src, i), SourceName: src,
				IndexName: src + "_raw_content", ErrorCode: domain.ErrorCodeQualityError, ErrorMessage: "scorer failed"})
		}
	}
	if _, err := q.repo.EnqueueBatch(ctx, failures); err != nil {
		t.Fatal(err)
	}
	// a's entries are the oldest by far.
	if _, err := q.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() - CASE WHEN source_name = 'a' THEN INTERVAL '1 day' ELSE INTERVAL '1 minute' END`); err != nil {
		t.Fatal(err)
	}
	claim, err := q.repo.FetchRetryable(ctx, deadletter.ClaimRequest{Limit: 6, Lease: time.Minute, SourceBudget: 10, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	bySource := map[string]int{}
	for _, e := range claim.Entries {
		bySource[e.SourceName]++
	}
	if len(claim.Entries) != 6 || bySource["a"] != 2 || bySource["b"] != 2 || bySource["c"] != 2 {
		t.Fatalf("claimed %v; want two turns of each source", bySource)
	}
	if len(claim.Deferred) != 0 {
		t.Fatalf("deferred %v within the budget", claim.Deferred)
	}

	// a has spent 8 of 10 in this window: move its spending to an earlier
	// window and it has the whole budget again.
	if _, err := q.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() - INTERVAL '1 second'`); err != nil {
		t.Fatal(err)
	}
	if _, err := q.db.Exec(`UPDATE dlq_retry_budgets SET spent = 8 WHERE source_name = 'a'`); err != nil {
		t.Fatal(err)
	}
	claim, err = q.repo.FetchRetryable(ctx, deadletter.ClaimRequest{Limit: 100, Lease: time.Minute, SourceBudget: 10, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	bySource = map[string]int{}
	for _, e := range claim.Entries {
		bySource[e.SourceName]++
	}
	if bySource["a"] != 2 || claim.Deferred["a"] != 3 {
		t.Fatalf("a: claimed %d, deferred %d; want the 2 left of its budget and 3 deferred", bySource["a"], claim.Deferred["a"])
	}
	if _, err := q.db.Exec(`UPDATE dlq_retry_budgets SET window_start = window_start - INTERVAL '1 hour'`); err != nil {
		t.Fatal(err)
	}
	if _, err := q.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() - INTERVAL '1 second'`); err != nil {
		t.Fatal(err)
	}
	claim, err = q.repo.FetchRetryable(ctx, deadletter.ClaimRequest{Limit: 100, Lease: time.Minute, SourceBudget: 10, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	bySource = map[string]int{}
	for _, e := range claim.Entries {
		bySource[e.SourceName]++
	}
	if bySource["a"] != 5 || len(claim.Deferred) != 0 {
		t.Fatalf("in a new window a: claimed %d, deferred %v; want all 5, none deferred", bySource["a"], claim.Deferred)
	}
}
