package deadletter_test

import (
	"context"
	"database/sql"
	"github.com/north-cloud/classifier/internal/dbtest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/testenv"
)

// queue is a dead-letter repository over a fresh, migrated database of the
// test's own, with its metrics read by a manual reader.
type queue struct {
	repo   *deadletter.Repository
	db     *sql.DB
	reader *sdkmetric.ManualReader
}

func setupQueue(t *testing.T, cfg deadletter.RepositoryConfig) *queue {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	reader := sdkmetric.NewManualReader()
	metrics, err := telemetry.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"), telemetry.Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics, cfg.Logger = metrics, testenv.Logger(t)
	repo, err := deadletter.NewRepositoryWith(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &queue{repo: repo, db: db, reader: reader}
}

// fail records one failure of the document doc of source "alpha".
func (q *queue) fail(t *testing.T, doc string, code domain.ErrorCode, message string) deadletter.Recorded {
	t.Helper()
	recs, err := q.repo.EnqueueBatch(context.Background(), []domain.DeadLetterEntry{{
		ContentID: doc, SourceName: "alpha", IndexName: "alpha_raw_content", ErrorCode: code, ErrorMessage: message}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("Record returned %d rows, want 1", len(recs))
	}
	return recs[0]
}

// makeDue moves every entry's next retry into the past, as time passing
// would.
func (q *queue) makeDue(t *testing.T) {
	t.Helper()
	if _, err := q.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() - INTERVAL '1 second'`); err != nil {
		t.Fatal(err)
	}
}

// retried reports whether the retry worker's claim takes the document now
// that it is due.
func (q *queue) retried(t *testing.T, doc string) bool {
	t.Helper()
	q.makeDue(t)
	claim, err := q.repo.FetchRetryable(context.Background(), deadletter.ClaimRequest{Limit: 10, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range claim.Entries {
		if e.ContentID == doc {
			return true
		}
	}
	return false
}

func (q *queue) entry(t *testing.T, doc string) domain.DeadLetterEntry {
	t.Helper()
	entries, err := q.repo.List(context.Background(), deadletter.Filter{ContentID: doc}, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("%d entries for %s, want 1", len(entries), doc)
	}
	return entries[0]
}

// counter returns the value of a counter with the given attributes (0 when
// it has no such point).
func (q *queue) counter(t *testing.T, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := q.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := attribute.NewSet(attrs...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s is %T", name, m.Data)
			}
			for _, p := range sum.DataPoints {
				if p.Attributes.Equals(&want) {
					return p.Value
				}
			}
		}
	}
	return 0
}

// panicked is the message of a rule panic on attempt n: the numbers and
// the request id change from one attempt to the next, the failure does not.
func panicked(n int) string {
	return strings.NewReplacer("N", string(rune('0'+n)), "ID", []string{"a1b2c3d4e5", "ffe0917c22", "0c9d8e7f6a"}[n%3]).
		Replace("classification panicked: runtime error: index out of range [N] with length 1N (request ID at 10.0.0.N:920N)")
}

// A document that fails the same way three times in a row stops retrying
// with the reason; a re-queue gives it its retries back.
func TestThreeIdenticalFailuresMakeAnEntryPermanent(t *testing.T) {
	t.Parallel()
	q := setupQueue(t, deadletter.RepositoryConfig{PermanentAfter: 3})
	source := attribute.String("source", "alpha")
	code := attribute.String("error_code", string(domain.ErrorCodeRulePanic))

	if rec := q.fail(t, "doc-1", domain.ErrorCodeRulePanic, panicked(1)); !rec.Inserted || rec.PermanentReason != "" {
		t.Fatalf("first failure: %+v, want inserted and not permanent", rec)
	}
	if !q.retried(t, "doc-1") {
		t.Fatal("after one failure the entry is not retried")
	}
	if rec := q.fail(t, "doc-1", domain.ErrorCodeRulePanic, panicked(2)); rec.Exhausted || rec.PermanentReason != "" {
		t.Fatalf("second identical failure: %+v, want still retryable", rec)
	}
	if !q.retried(t, "doc-1") {
		t.Fatal("after two identical failures the entry is not retried")
	}
	rec := q.fail(t, "doc-1", domain.ErrorCodeRulePanic, panicked(3))
	if !rec.Exhausted || !strings.Contains(rec.PermanentReason, "3 times in a row with RULE_PANIC") {
		t.Fatalf("third identical failure: %+v, want exhausted with a permanent reason", rec)
	}
	if q.retried(t, "doc-1") {
		t.Fatal("a permanent entry was claimed for another retry")
	}

	e := q.entry(t, "doc-1")
	if !e.Permanent || !e.Exhausted || e.PermanentReason == nil || e.PermanentAt == nil || e.FailureStreak != 3 {
		t.Fatalf("entry = %+v, want permanent, exhausted, streak 3, with a reason and a time", e)
	}
	if e.RetryCount != 2 || e.MaxRetries != 2 {
		t.Fatalf("retries = %d/%d, want 2/2 (two retries spent, none left)", e.RetryCount, e.MaxRetries)
	}
	if !strings.Contains(*e.PermanentReason, "index out of range [<n>] with length <n>") {
		t.Fatalf("reason %q does not quote the normalized message", *e.PermanentReason)
	}
	if n := q.counter(t, "classifier_dlq_permanent_total", source, code); n != 1 {
		t.Fatalf("classifier_dlq_permanent_total = %d, want 1", n)
	}
	if n := q.counter(t, "classifier_dlq_entries_total", source, code); n != 1 {
		t.Fatalf("classifier_dlq_entries_total = %d, want 1 (one document, three attempts)", n)
	}
	yes := true
	if list, err := q.repo.List(context.Background(), deadletter.Filter{Permanent: &yes}, nil, 10); err != nil || len(list) != 1 {
		t.Fatalf("permanent filter: %d entries, %v; want 1", len(list), err)
	}

	// A failure of a permanent entry changes nothing.
	if recs, err := q.repo.EnqueueBatch(context.Background(), []domain.DeadLetterEntry{{ContentID: "doc-1", SourceName: "alpha",
		IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeRulePanic, ErrorMessage: panicked(4)}}); err != nil || len(recs) != 0 {
		t.Fatalf("Record on a permanent entry: %v, %v; want no row touched", recs, err)
	}

	if err := q.repo.Requeue(context.Background(), e.ID); err != nil {
		t.Fatal(err)
	}
	e = q.entry(t, "doc-1")
	if e.Permanent || e.PermanentReason != nil || e.Exhausted || e.MaxRetries != domain.MaxRetriesDefault || e.FailureStreak != 0 {
		t.Fatalf("requeued entry = %+v, want retryable with %d retries and a new streak", e, domain.MaxRetriesDefault)
	}
	if !q.retried(t, "doc-1") {
		t.Fatal("a requeued permanent entry is not retried")
	}
}

// A different failure between identical ones starts the count again: two
// identical and one different keep retrying.
func TestADifferentFailureResetsTheStreak(t *testing.T) {
	t.Parallel()
	q := setupQueue(t, deadletter.RepositoryConfig{PermanentAfter: 3})
	q.fail(t, "doc-2", domain.ErrorCodeRulePanic, panicked(1))
	q.fail(t, "doc-2", domain.ErrorCodeRulePanic, panicked(2))
	rec := q.fail(t, "doc-2", domain.ErrorCodeQualityError, "quality scorer: word count 12 below 50")
	if rec.Exhausted || rec.PermanentReason != "" {
		t.Fatalf("two identical and one different: %+v, want still retryable", rec)
	}
	if e := q.entry(t, "doc-2"); e.Permanent || e.FailureStreak != 1 {
		t.Fatalf("entry = %+v, want a streak of 1 and not permanent", e)
	}
	if !q.retried(t, "doc-2") {
		t.Fatal("two identical failures and a different one stopped the retries")
	}
	// The same code with a message that differs in more than numbers is a
	// different failure too.
	q.fail(t, "doc-2", domain.ErrorCodeQualityError, "quality scorer: word count 13 below 50")
	if rec := q.fail(t, "doc-2", domain.ErrorCodeQualityError, "quality scorer: title missing"); rec.PermanentReason != "" {
		t.Fatalf("a different message made the entry permanent: %+v", rec)
	}
	if e := q.entry(t, "doc-2"); e.FailureStreak != 1 || e.Exhausted {
		t.Fatalf("entry = %+v, want a streak of 1, retryable", e)
	}
}

// An outage of a dependency says nothing about the document: the same
// time-out three times keeps retrying within the entry's retries.
func TestDependencyFailuresAreNeverPermanent(t *testing.T) {
	t.Parallel()
	q := setupQueue(t, deadletter.RepositoryConfig{PermanentAfter: 3})
	for i := range 3 {
		if rec := q.fail(t, "doc-3", domain.ErrorCodeESTimeout, "context deadline exceeded after 30s"); rec.PermanentReason != "" {
			t.Fatalf("ES_TIMEOUT failure %d made the entry permanent: %+v", i+1, rec)
		}
	}
	if e := q.entry(t, "doc-3"); e.FailureStreak != 3 || e.Permanent || e.Exhausted {
		t.Fatalf("entry = %+v, want a streak of 3, not permanent, retryable", e)
	}
	if !q.retried(t, "doc-3") {
		t.Fatal("repeated time-outs stopped the retries")
	}
}

func TestRepositoryConfigIsChecked(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 1, 1001} {
		if _, err := deadletter.NewRepositoryWith(nil, deadletter.RepositoryConfig{PermanentAfter: n}); err == nil {
			t.Errorf("PermanentAfter %d accepted", n)
		}
	}
}

func TestSignatureKeepsWhatWentWrongAndDropsWhatVaries(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{panicked(1), panicked(2)},
		{"dial tcp 10.1.2.3:5432: connection refused", "dial tcp 192.168.0.7:6543: connection refused"},
		{"GET https://news.test/a?id=1 failed: status 502", "GET http://x.test/b failed: status 504"},
		{"entry 3f2b8c1e-0d4a-4b8e-9a61-2c7d5e9f0a1b conflict", "entry 00000000-0000-0000-0000-000000000000 conflict"},
		{"nil map write at 0xc000123abc", "nil map write at 0xc0004f5e60"},
		{"doc  AZ3fK9qLmP2x\tfailed", "doc AZ4gH1pQrS7y failed"},
	}
	for _, p := range same {
		if a, b := deadletter.Signature(p[0]), deadletter.Signature(p[1]); a != b {
			t.Errorf("Signature(%q) = %q, Signature(%q) = %q; want equal", p[0], a, p[1], b)
		}
	}
	different := [][2]string{
		{"quality scorer: title missing", "quality scorer: body missing"},
		{"index out of range", "nil pointer dereference"},
	}
	for _, p := range different {
		if a, b := deadletter.Signature(p[0]), deadletter.Signature(p[1]); a == b {
			t.Errorf("Signature(%q) = Signature(%q) = %q; want different", p[0], p[1], a)
		}
	}
	if s := deadletter.Signature(strings.Repeat("failure ", 200) + "\x00\xff"); len([]rune(s)) > 300 || strings.ContainsRune(s, 0) {
		t.Errorf("Signature of a long message with a NUL is %d characters: %q", len([]rune(s)), s)
	}
}
