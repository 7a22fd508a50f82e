package worker_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/sink"
	"github.com/north-cloud/publisher/internal/worker"
)

// breakerCfg opens a breaker at the first failure and probes quickly.
func breakerCfg() worker.Config {
	return worker.Config{
		BatchSize: 10, BreakerThreshold: 1, BreakerCooldown: 50 * time.Millisecond, BreakerMaxCooldown: 200 * time.Millisecond,
		PostgresBreakerThreshold: 1, PostgresBreakerCooldown: 50 * time.Millisecond, BreakerProbeInterval: 20 * time.Millisecond,
		PublishTimeout: 2 * time.Second,
		// A retry spent by the outage would leave a row failed for an hour.
		Retry: backoff.Policy{Initial: time.Hour, Max: time.Hour},
	}
}

// A private redis-server requires a password the publisher does not send:
// every PUBLISH gets NOAUTH, a reply about the connection and not the
// message. The Redis breaker opens, the rows go back to pending with no
// retry spent and nothing failed; once the server stops requiring the
// password the probe closes the breaker and every row is delivered.
func TestRedisNOAUTHOpensBreakerWithoutSpendingRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t, "--requirepass", "s3cret")
	admin := rs.ClientWithPassword("s3cret")
	sub := outboxtest.Subscribe(t, admin)
	outboxtest.Insert(t, b.db, outboxtest.Rows("noauth", 25))
	cfg := breakerCfg()
	cfg.BreakerThreshold = 3 // the default: three batches in a row meet NOAUTH
	// One claim loop: with two, the second may be claiming a batch it
	// checked the breaker for just before the first loop's failure opened
	// it (a call in flight, rightly allowed), and that claim can land after
	// the rows were seen released, however long the test waits.
	cfg.ClaimLoops = 1
	w := b.startWorker(t, cfg, rs.Client())

	outboxtest.WaitFor(t, time.Minute, "redis breaker open", func() bool { return w.RedisBreaker().State() != breaker.Closed })
	outboxtest.WaitFor(t, time.Minute, "claimed rows released", func() bool { return outboxtest.Counts(t, b.db)["publishing"] == 0 })
	if counts := outboxtest.Counts(t, b.db); counts["pending"] != 25 {
		t.Fatalf("with NOAUTH: %v, want all 25 rows pending", counts)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE retry_count > 0 OR error_message IS NOT NULL OR claim_token IS NOT NULL`); n != 0 {
		t.Fatalf("%d rows spent a retry, kept an error or a claim token", n)
	}
	// While the breaker is open the worker claims nothing: the rows are not
	// touched over several poll intervals (200ms) and probe cooldowns.
	var before time.Time
	if err := b.db.QueryRow(`SELECT MAX(updated_at) FROM classified_outbox`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	var after time.Time
	if err := b.db.QueryRow(`SELECT MAX(updated_at) FROM classified_outbox`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if !after.Equal(before) {
		t.Errorf("rows claimed while the breaker was open (updated_at %s -> %s)", before, after)
	}
	if cause := w.RedisBreaker().LastCause(); cause == nil || !strings.Contains(cause.Error(), "NOAUTH") {
		t.Errorf("breaker cause %v, want NOAUTH", cause)
	}
	if w.PostgresBreaker().State() != breaker.Closed {
		t.Errorf("postgres breaker %s", w.PostgresBreaker().State())
	}
	m := b.scrape(t)
	if !strings.Contains(m, `publisher_breaker_state{dependency="redis"} 2`) && !strings.Contains(m, `publisher_breaker_state{dependency="redis"} 1`) {
		t.Errorf("redis breaker gauge not open:\n%s", grep(m, "breaker_state"))
	}
	if !strings.Contains(m, `publisher_breaker_state{dependency="postgres"} 0`) || strings.Contains(m, "publisher_redis_breaker_state 0") {
		t.Errorf("breaker gauges:\n%s", grep(m, "breaker_state"))
	}
	if strings.Contains(m, "publisher_outbox_failed_total") {
		t.Errorf("NOAUTH counted as message failures:\n%s", grep(m, "failed_total"))
	}

	// Fix the connection: the server stops requiring a password.
	if err := admin.ConfigSet(context.Background(), "requirepass", "").Err(); err != nil {
		t.Fatal(err)
	}
	outboxtest.WaitFor(t, time.Minute, "every row delivered", func() bool {
		ids, _ := sub.Distinct()
		return ids == 25 && outboxtest.Counts(t, b.db)["published"] == 25
	})
	if w.RedisBreaker().State() != breaker.Closed {
		t.Errorf("breaker %s after recovery", w.RedisBreaker().State())
	}
	if n := b.retried(t); n != 0 {
		t.Errorf("%d rows spent a retry", n)
	}
}

// A user that may not run PUBLISH at all (ACL -publish: "no permissions to
// run the 'publish' command") cannot publish anything: a dependency fault,
// no retry spent. PING still answers, so the probe also publishes (to
// sink.ProbeChannel): the breaker stays open instead of closing at every
// probe, and closes once the ACL allows PUBLISH again. A channel the ACL
// refuses stays a per-message failure (TestRetryBackoffToSuccessAndExhaustion).
func TestRedisNOPERMForCommandIsDependencyFault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	admin := rs.Client()
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", "-publish").Err(); err != nil {
		t.Fatal(err)
	}
	outboxtest.Insert(t, b.db, outboxtest.Rows("noperm", 5))
	var changes []string
	w := b.startWorker(t, breakerCfg(), rs.Client())
	outboxtest.WaitFor(t, time.Minute, "redis breaker open", func() bool { return w.RedisBreaker().State() != breaker.Closed })
	outboxtest.WaitFor(t, time.Minute, "claimed rows released", func() bool { return outboxtest.Counts(t, b.db)["publishing"] == 0 })
	for range 10 { // 1s: many probe cooldowns (50ms doubling to 200ms)
		if w.RedisBreaker().State() == breaker.Closed {
			changes = append(changes, "closed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(changes) > 0 {
		t.Errorf("breaker closed %d times while PUBLISH was refused", len(changes))
	}
	if c := outboxtest.Counts(t, b.db); c["pending"] != 5 || b.retried(t) != 0 {
		t.Fatalf("rows %v, want 5 pending with no retry spent", c)
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", "+publish").Err(); err != nil {
		t.Fatal(err)
	}
	outboxtest.WaitFor(t, time.Minute, "rows published", func() bool { return outboxtest.Counts(t, b.db)["published"] == 5 })
}

// The Postgres breaker: claims failing with connection errors (the network
// to the database is cut) open it; while it is open the worker publishes
// nothing; the monitor's ping closes it once the database is reachable, and
// draining resumes by itself.
//
// A claim sent just before the cut may still run: Postgres executes a
// statement already in its socket buffer after the client is gone, and on a
// loaded machine it may do so after the test's insert. Its rows are left
// publishing with no worker to finish them, the "lost its connection between
// claim and outcome" case the rescuer exists for, so one runs here as in
// production (with a stale-after of seconds, not minutes).
func TestPostgresOutageOpensBreaker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	proxy, viaProxy := outboxtest.ProxyDSN(t, b.dsn)
	db, err := sql.Open("postgres", viaProxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	repo := outbox.NewRepository(db)
	cfg := breakerCfg()
	cfg.ListenURL = b.dsn // wake-ups come straight from the database
	cfg.PollInterval = 50 * time.Millisecond
	w := b.newWorker(t, cfg, repo, rs.Client())
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	rescuer := worker.NewRescuer(worker.RescuerConfig{StaleAfter: 3 * cfg.PublishTimeout, Interval: 100 * time.Millisecond}, b.repo, b.metrics, testenv.Logger(t))
	if err := rescuer.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rescuer.Stop(context.Background()) })
	outboxtest.Insert(t, b.db, outboxtest.Rows("pg-before", 10))
	outboxtest.WaitFor(t, time.Minute, "rows published", func() bool { return outboxtest.Counts(t, b.db)["published"] == 10 })

	proxy.Cut()
	outboxtest.Insert(t, b.db, outboxtest.Rows("pg-during", 10))
	outboxtest.WaitFor(t, time.Minute, "postgres breaker open", func() bool { return w.PostgresBreaker().State() != breaker.Closed })
	if err := w.PostgresBreaker().Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "postgres circuit breaker") {
		t.Errorf("ready: %v", err)
	}
	m := b.scrape(t)
	if !strings.Contains(m, `publisher_breaker_state{dependency="postgres"} 2`) && !strings.Contains(m, `publisher_breaker_state{dependency="postgres"} 1`) {
		t.Errorf("postgres breaker gauge:\n%s", grep(m, "breaker_state"))
	}
	if w.RedisBreaker().State() != breaker.Closed {
		t.Errorf("redis breaker %s during a database outage", w.RedisBreaker().State())
	}
	if c := outboxtest.Counts(t, b.db); c["published"] != 10 || c["pending"]+c["publishing"] != 10 || c["failed"] != 0 {
		t.Fatalf("during the outage: %v, want the 10 new rows pending (or held by a claim whose reply was lost)", c)
	}
	if n := b.retried(t); n != 0 {
		t.Errorf("%d retries spent by the outage", n)
	}

	proxy.Restore()
	outboxtest.WaitFor(t, time.Minute, "rows published after the database is back", func() bool {
		return outboxtest.Counts(t, b.db)["published"] == 20
	})
	if w.PostgresBreaker().State() != breaker.Closed {
		t.Errorf("postgres breaker %s after recovery", w.PostgresBreaker().State())
	}
}

// With the stream mirror on, a failed XADD after a successful PUBLISH (the
// stream key holds a string) leaves the row published, once: it is counted
// and logged, not retried (a retry would publish the message again).
func TestStreamMirrorFailureMarksPublished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	ctx := context.Background()
	if err := rs.Client().Set(ctx, sink.StreamPrefixDefault+"articles:news", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sub := outboxtest.Subscribe(t, rs.Client())
	outboxtest.Insert(t, b.db, outboxtest.Rows("mirrorfail", 5))
	w := b.newWorkerSink(t, worker.Config{}, b.repo, mirrorSink(t, rs.Client(), sink.MirrorConfig{}))
	if n, err := w.DrainOnce(ctx); n != 5 || err != nil {
		t.Fatalf("drain: %d %v", n, err)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'published' AND retry_count = 0 AND error_message IS NULL`); n != 5 {
		t.Fatalf("%d rows published cleanly, want 5: %v", n, outboxtest.Counts(t, b.db))
	}
	if n, err := w.DrainOnce(ctx); n != 0 || err != nil {
		t.Fatalf("second drain claimed %d %v", n, err)
	}
	outboxtest.WaitFor(t, time.Minute, "messages received", func() bool { ids, _ := sub.Distinct(); return ids == 5 })
	if _, total := sub.Distinct(); total != 5 {
		t.Errorf("%d messages, want 5", total)
	}
	if m := b.scrape(t); !strings.Contains(m, `publisher_stream_mirror_failures_total{channel="articles:news"} 5`) {
		t.Errorf("mirror failure metric:\n%s", grep(m, "mirror"))
	}
	if w.RedisBreaker().State() != breaker.Closed {
		t.Errorf("breaker %s", w.RedisBreaker().State())
	}
}

// The claim token: a batch claimed by A outlives the stale age, is rescued
// and claimed by B. A's late outcome (published, failed or released)
// touches none of B's rows; B's claim records its own outcome.
func TestClaimTokenKeepsRescuedRowsWithNewClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	outboxtest.Insert(t, b.db, outboxtest.Rows("token", 4))
	a, err := b.repo.FetchPending(ctx, 10)
	if err != nil || len(a.Entries) != 4 || a.Token == "" {
		t.Fatalf("claim A: %d rows, token %q, %v", len(a.Entries), a.Token, err)
	}
	if _, err := b.db.Exec(`UPDATE classified_outbox SET updated_at = NOW() - INTERVAL '10 minutes'`); err != nil {
		t.Fatal(err)
	}
	if n, err := b.repo.ResetToPending(ctx, 5*time.Minute); n != 4 || err != nil {
		t.Fatalf("rescue: %d %v", n, err)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE claim_token IS NOT NULL`); n != 0 {
		t.Fatalf("rescue left %d claim tokens", n)
	}
	bb, err := b.repo.FetchPending(ctx, 10)
	if err != nil || len(bb.Entries) != 4 || bb.Token == a.Token {
		t.Fatalf("claim B: %d rows, token %q (A %q), %v", len(bb.Entries), bb.Token, a.Token, err)
	}
	ids := make([]string, len(a.Entries))
	var failures []outbox.Failure
	for i, e := range a.Entries {
		ids[i] = e.ID
		failures = append(failures, outbox.Failure{ID: e.ID, Error: "late", RetryIn: time.Hour})
	}
	if n, err := b.repo.MarkPublished(ctx, a.Token, ids[:2]); n != 0 || err != nil {
		t.Errorf("A's mark published touched %d rows (%v), want 0", n, err)
	}
	if m, err := b.repo.MarkFailed(ctx, a.Token, failures[2:]); len(m.Recorded) != 0 || err != nil {
		t.Errorf("A's mark failed touched %v (%v), want none", m.Recorded, err)
	}
	if n, err := b.repo.Release(ctx, a.Token, ids); n != 0 || err != nil {
		t.Errorf("A's release touched %d rows (%v), want 0", n, err)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'publishing' AND claim_token = $1 AND retry_count = 0`, bb.Token); n != 4 {
		t.Fatalf("%d rows still held by B's claim, want 4", n)
	}
	if n, err := b.repo.MarkPublished(ctx, bb.Token, ids); n != 4 || err != nil {
		t.Fatalf("B's mark published: %d %v", n, err)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'published' AND claim_token IS NULL`); n != 4 {
		t.Errorf("%d rows published with the token cleared, want 4", n)
	}
}

// MarkAndClaim marks the published rows of the previous claim and claims
// the next batch in one statement. It marks only the rows named and still
// held by that claim (a rescued row is left to whoever holds it now), and
// the count of rows it marked comes back even when nothing is left to
// claim.
func TestMarkAndClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	outboxtest.Insert(t, b.db, outboxtest.Rows("mac", 6))
	ids := func(batch outbox.Batch) []string {
		out := make([]string, len(batch.Entries))
		for i, e := range batch.Entries {
			out[i] = e.ID
		}
		return out
	}
	first, err := b.repo.FetchPending(ctx, 3)
	if err != nil || len(first.Entries) != 3 {
		t.Fatalf("first claim: %d rows, %v", len(first.Entries), err)
	}
	// Two of the first batch went out, the third did not.
	marked, second, err := b.repo.MarkAndClaim(ctx, outbox.Published{Token: first.Token, IDs: ids(first)[:2]}, 10)
	if err != nil || marked != 2 || len(second.Entries) != 3 || second.Token == first.Token {
		t.Fatalf("mark 2 and claim: marked %d, claimed %d (token %q, first %q), %v, want 2 marked and the 3 other rows",
			marked, len(second.Entries), second.Token, first.Token, err)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'publishing' AND claim_token = $1`, first.Token); n != 1 {
		t.Errorf("%d rows of the first claim still publishing, want the one not marked", n)
	}
	// One row of the second batch is rescued meanwhile: pending again, no token.
	rescued := second.Entries[0].ID
	if _, err := b.db.Exec(`UPDATE classified_outbox SET status = 'pending', claim_token = NULL WHERE id = $1`, rescued); err != nil {
		t.Fatal(err)
	}
	marked, third, err := b.repo.MarkAndClaim(ctx, outbox.Published{Token: second.Token, IDs: ids(second)}, 10)
	if err != nil || marked != 2 || len(third.Entries) != 1 || third.Entries[0].ID != rescued {
		t.Fatalf("mark the second batch: marked %d, claimed %d, %v, want 2 marked (not the rescued row) and the rescued row claimed",
			marked, len(third.Entries), err)
	}
	marked, fourth, err := b.repo.MarkAndClaim(ctx, outbox.Published{Token: third.Token, IDs: ids(third)}, 10)
	if err != nil || marked != 1 || len(fourth.Entries) != 0 {
		t.Fatalf("mark the last batch with nothing left: marked %d, claimed %d, %v, want 1 and none", marked, len(fourth.Entries), err)
	}
	if c := outboxtest.Counts(t, b.db); c["published"] != 5 || c["publishing"] != 1 {
		t.Errorf("counts %v, want 5 published and the first batch's unmarked row publishing", c)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'published' AND (claim_token IS NOT NULL OR published_at IS NULL)`); n != 0 {
		t.Errorf("%d published rows keep a claim token or lack published_at", n)
	}
}

// The same with two running workers: A's batch hangs in its Redis (paused)
// past the stale age; the rows are rescued and B claims them (B's Redis is
// paused too). When A's publish finally returns, its outcome touches none of
// B's rows (counted in publisher_outbox_claim_lost_total); B then publishes
// them and records its own outcome.
func TestLateBatchDoesNotOverwriteNewClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ra, rb := outboxtest.StartRedis(t), outboxtest.StartRedis(t)
	pause := func(rs *outboxtest.RedisServer) {
		t.Helper()
		if err := rs.Client().Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Client().Do(ctx, "CLIENT", "UNPAUSE") })
	}
	unpause := func(rs *outboxtest.RedisServer) {
		t.Helper()
		if err := rs.Client().Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Fatal(err)
		}
	}
	pause(ra)
	pause(rb)
	outboxtest.Insert(t, b.db, outboxtest.Rows("late", 10))
	cfg := worker.Config{BatchSize: 10, PublishTimeout: time.Minute}
	wa := b.newWorker(t, cfg, b.repo, ra.Client())
	aDone := make(chan error, 1)
	go func() { _, err := wa.DrainOnce(ctx); aDone <- err }()
	outboxtest.WaitFor(t, time.Minute, "A's batch in flight", func() bool { return outboxtest.Counts(t, b.db)["publishing"] == 10 })

	if _, err := b.db.Exec(`UPDATE classified_outbox SET updated_at = NOW() - INTERVAL '10 minutes'`); err != nil {
		t.Fatal(err)
	}
	if n, err := b.repo.ResetToPending(ctx, 5*time.Minute); n != 10 || err != nil {
		t.Fatalf("rescue: %d %v", n, err)
	}
	wb := b.newWorker(t, cfg, b.repo, rb.Client())
	bDone := make(chan error, 1)
	go func() { _, err := wb.DrainOnce(ctx); bDone <- err }()
	outboxtest.WaitFor(t, time.Minute, "B's batch in flight", func() bool { return outboxtest.Counts(t, b.db)["publishing"] == 10 })
	var tokenB string
	if err := b.db.QueryRow(`SELECT DISTINCT claim_token::text FROM classified_outbox`).Scan(&tokenB); err != nil {
		t.Fatalf("one claim token for the rows: %v", err)
	}

	unpause(ra)
	if err := <-aDone; err != nil {
		t.Fatalf("A's drain: %v", err)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'publishing' AND claim_token = $1`, tokenB); n != 10 {
		t.Fatalf("after A's late outcome %d rows held by B, want 10: %v", n, outboxtest.Counts(t, b.db))
	}
	if m := b.scrape(t); !strings.Contains(m, "publisher_outbox_claim_lost_total 10") {
		t.Errorf("claim lost metric:\n%s", grep(m, "claim_lost"))
	}

	unpause(rb)
	if err := <-bDone; err != nil {
		t.Fatalf("B's drain: %v", err)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'published' AND retry_count = 0 AND claim_token IS NULL`); n != 10 {
		t.Errorf("%d rows published by B, want 10: %v", n, outboxtest.Counts(t, b.db))
	}
}
