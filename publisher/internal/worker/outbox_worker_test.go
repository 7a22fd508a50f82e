package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/domain"
	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/sink"
	"github.com/north-cloud/publisher/internal/worker"
)

func ptr[T any](v T) *T { return &v }

// Four workers drain 20,000 rows together: every row is published, and no
// message arrives twice.
func TestConcurrentWorkersPublishEveryRowOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	sub := outboxtest.Subscribe(t, rs.Client())
	const n = 20000
	outboxtest.Insert(t, b.db, outboxtest.Rows("conc", n))

	for range 4 {
		b.startWorker(t, worker.Config{BatchSize: 250}, rs.Client())
	}
	outboxtest.WaitFor(t, 3*time.Minute, "every row published and received", func() bool {
		ids, _ := sub.Distinct()
		return ids == n && outboxtest.Counts(t, b.db)["published"] == n
	})
	ids, total := sub.Distinct()
	if ids != n || total != n {
		t.Fatalf("received %d messages for %d distinct ids, want %d each", total, ids, n)
	}
	for id, c := range sub.Counts() {
		if c != 1 {
			t.Errorf("content %s received %d times", id, c)
		}
	}
	if got := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE retry_count > 0 OR status <> 'published'`); got != 0 {
		t.Errorf("%d rows not published cleanly", got)
	}
}

// Redis stops in the middle of a drain and comes back: the breaker opens,
// claiming stops with rows left pending and no retry used, and every row is
// published once Redis is back.
func TestRedisOutageMidDrain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	outboxtest.Insert(t, b.db, outboxtest.Rows("outage", 10000))
	cfg := worker.Config{
		BatchSize: 50, BreakerThreshold: 1, BreakerCooldown: 50 * time.Millisecond, BreakerMaxCooldown: 200 * time.Millisecond,
		PublishTimeout: 2 * time.Second,
		// A retry used by the outage would leave a row failed for an hour.
		Retry: backoff.Policy{Initial: time.Hour, Max: time.Hour},
	}
	w1 := b.startWorker(t, cfg, rs.Client())
	w2 := b.startWorker(t, cfg, rs.Client())
	outboxtest.WaitFor(t, time.Minute, "some rows published", func() bool {
		return outboxtest.Counts(t, b.db)["published"] >= 200
	})

	rs.Stop()
	outboxtest.Insert(t, b.db, outboxtest.Rows("outage-late", 1000)) // arrives during the outage
	outboxtest.WaitFor(t, time.Minute, "both breakers open", func() bool {
		return w1.RedisBreaker().State() != breaker.Closed && w2.RedisBreaker().State() != breaker.Closed
	})
	outboxtest.WaitFor(t, time.Minute, "claimed rows released", func() bool {
		return outboxtest.Counts(t, b.db)["publishing"] == 0
	})
	counts := outboxtest.Counts(t, b.db)
	if counts["failed"] != 0 || counts["pending"] == 0 {
		t.Fatalf("during the outage: %v, want pending rows and none failed", counts)
	}
	if m := b.scrape(t); !strings.Contains(m, "publisher_redis_breaker_state 2") && !strings.Contains(m, "publisher_redis_breaker_state 1") {
		t.Errorf("breaker state metric not open or half-open:\n%s", grep(m, "breaker"))
	}

	rs.Start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rows %v; breakers redis %s/%s postgres %s/%s", outboxtest.Counts(t, b.db),
				w1.RedisBreaker().State(), w2.RedisBreaker().State(), w1.PostgresBreaker().State(), w2.PostgresBreaker().State())
		}
	})
	outboxtest.WaitFor(t, 2*time.Minute, "every row published after Redis is back", func() bool {
		return outboxtest.Counts(t, b.db)["published"] == 11000
	})
	if got := b.retried(t); got != 0 {
		t.Errorf("%d rows used a retry because of the outage", got)
	}
	if w1.RedisBreaker().State() != breaker.Closed || w2.RedisBreaker().State() != breaker.Closed {
		t.Errorf("breakers not closed after recovery")
	}
}

// Crime content is claimed first, then the oldest first.
func TestClaimPriorityOrdering(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := outboxtest.Rows("prio", 6)
	rows[4].IsCrimeRelated, rows[5].IsCrimeRelated = true, true
	outboxtest.Insert(t, b.db, rows)
	// prio-0 is the oldest row, prio-5 the newest.
	if _, err := b.db.Exec(`UPDATE classified_outbox SET created_at = NOW() - make_interval(secs => 100 - split_part(content_id, '-', 2)::int)`); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		batch, err := b.repo.FetchPending(context.Background(), 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range batch.Entries {
			got = append(got, e.ContentID)
		}
	}
	want := "prio-4 prio-5 prio-0 prio-1 prio-2 prio-3"
	if strings.Join(got, " ") != want {
		t.Fatalf("claim order %v, want %s", got, want)
	}
}

// A row whose channel Redis refuses (an ACL without that channel: an error
// reply to that one PUBLISH) fails with backoff until it exhausts its
// retries; it stays visible and re-queueable; a row that fails a few times
// and then gets through is published.
func TestRetryBackoffToSuccessAndExhaustion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	admin := rs.Client()
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", "resetchannels", "&articles:*").Err(); err != nil {
		t.Fatal(err)
	}
	rows := outboxtest.Rows("retry", 3)
	rows[0].ContentType = "video" // exhausts
	rows[1].ContentType = "image" // succeeds after a few failures
	outboxtest.Insert(t, b.db, rows)
	policy := backoff.Policy{Initial: 40 * time.Millisecond, Max: 300 * time.Millisecond, Multiplier: 2, Jitter: 0.5}
	w := b.startWorker(t, worker.Config{BatchSize: 10, PollInterval: 20 * time.Millisecond, Retry: policy}, rs.Client())

	retries := func(id string) (status string, n int, errMsg string, backoffSecs float64) {
		t.Helper()
		if err := b.db.QueryRow(`SELECT status, retry_count, COALESCE(error_message, ''),
			COALESCE(EXTRACT(EPOCH FROM next_retry_at - updated_at), 0)::float8 FROM classified_outbox WHERE content_id = $1`, id).
			Scan(&status, &n, &errMsg, &backoffSecs); err != nil {
			t.Fatal(err)
		}
		return
	}
	outboxtest.WaitFor(t, time.Minute, "image row failed twice", func() bool {
		_, n, _, _ := retries("retry-1")
		return n >= 2
	})
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", "&content:image").Err(); err != nil {
		t.Fatal(err)
	}
	outboxtest.WaitFor(t, time.Minute, "image row published", func() bool {
		s, _, _, _ := retries("retry-1")
		return s == "published"
	})
	if s, n, msg, _ := retries("retry-1"); n < 2 || msg != "" {
		t.Errorf("image row: status %s retry_count %d error %q, want published after >= 2 retries with the error cleared", s, n, msg)
	}
	if s, n, _, _ := retries("retry-2"); s != "published" || n != 0 {
		t.Errorf("article row: %s after %d retries, want published at once", s, n)
	}

	outboxtest.WaitFor(t, time.Minute, "video row exhausted", func() bool {
		_, n, _, _ := retries("retry-0")
		return n == 5
	})
	s, _, msg, secs := retries("retry-0")
	if s != "failed" || !strings.Contains(msg, "NOPERM") {
		t.Errorf("exhausted row: status %s error %q, want failed with the NOPERM reply", s, msg)
	}
	// The fifth failure waits policy.Delay(4) = min(40ms*2^4, 300ms), less up to 50% jitter.
	if secs < 0.15-0.001 || secs > 0.3+0.001 {
		t.Errorf("backoff after the fifth failure: %.3fs, want between 0.15s and 0.3s", secs)
	}
	if w.RedisBreaker().State() != breaker.Closed {
		t.Errorf("breaker %s: a refused channel is not a Redis outage", w.RedisBreaker().State())
	}
	// Exhausted rows are not claimed again...
	batch, err := b.repo.FetchPending(ctx, 10)
	if err != nil || len(batch.Entries) != 0 {
		t.Fatalf("claim after exhaustion: %v %v, want nothing", batch.Entries, err)
	}
	stats, err := b.repo.GetStats(ctx)
	if err != nil || stats.FailedExhausted != 1 || stats.FailedRetryable != 0 {
		t.Fatalf("stats %+v %v, want one exhausted row", stats, err)
	}
	if m := b.scrape(t); !strings.Contains(m, `publisher_outbox_exhausted_total{channel="content:video"} 1`) {
		t.Errorf("exhausted metric missing:\n%s", grep(m, "exhausted"))
	}
	// ...until an operator re-queues them.
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", "allchannels").Err(); err != nil {
		t.Fatal(err)
	}
	n2, err := b.repo.RequeueMatching(ctx, domain.OutboxFilter{Exhausted: ptr(true)})
	if err != nil || n2 != 1 {
		t.Fatalf("requeue: %d %v", n2, err)
	}
	outboxtest.WaitFor(t, time.Minute, "re-queued row published", func() bool {
		s, _, _, _ := retries("retry-0")
		return s == "published"
	})
}

// Stop while a batch is stuck in Redis: the batch is cancelled before the
// deadline and its rows go back to pending with no retry used. Each claim
// loop holds a batch.
func TestGracefulStopReleasesClaimedRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	admin := rs.Client()
	ctx := context.Background()
	outboxtest.Insert(t, b.db, outboxtest.Rows("stop", 30))
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(ctx, "CLIENT", "UNPAUSE") })
	w := b.newWorker(t, worker.Config{BatchSize: 10, PublishTimeout: time.Minute, ListenURL: b.dsn}, b.repo, rs.Client())
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	outboxtest.WaitFor(t, time.Minute, "a batch in flight in each claim loop", func() bool {
		return outboxtest.Counts(t, b.db)["publishing"] == 10*worker.ClaimLoopsDefault
	})
	stopCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := w.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	counts := outboxtest.Counts(t, b.db)
	if counts["pending"] != 30 {
		t.Fatalf("after stop: %v, want all 30 rows pending", counts)
	}
	if got := b.retried(t); got != 0 {
		t.Errorf("%d rows used a retry", got)
	}
}

// A republished document carries its version and what changed; a copy of
// another document's text names the original; the canonical URL is there.
// Two versions of one document are two messages.
func TestMessageCarriesVersionCanonicalURLAndDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rdb := testenv.Redis(t)
	sub := outboxtest.Subscribe(t, rdb)
	id := testenv.UniqueName("ver")
	row := outboxtest.Rows(id, 1)[0]
	row.ContentID = id
	row.CanonicalURL = "https://example.com/story"
	v2 := row
	v2.Version, v2.ChangedFields, v2.Topics = 2, []string{"topics"}, []string{"crime"}
	v2.DuplicateOf = &outbox.DocRef{Index: "wire_raw_content", ID: "w-1", Kind: "content"}
	outboxtest.Insert(t, b.db, []outboxtest.Row{row, v2})
	outboxtest.Insert(t, b.db, []outboxtest.Row{v2}) // the same version again: absorbed
	b.startWorker(t, worker.Config{}, rdb)
	outboxtest.WaitFor(t, time.Minute, "two versions of "+id, func() bool { return len(sub.Messages(id)) >= 2 })
	time.Sleep(500 * time.Millisecond) // a third message would arrive right behind
	msgs := sub.Messages(id)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want one per version", len(msgs))
	}
	byVersion := map[float64]map[string]any{}
	for _, m := range msgs {
		v, _ := m["version"].(float64)
		byVersion[v] = m
	}
	first, second := byVersion[1], byVersion[2]
	if first == nil || second == nil {
		t.Fatalf("%d distinct versions, want 1 and 2", len(byVersion))
	}
	if first["changed_fields"] != nil || first["duplicate_of"] != nil || first["canonical_url"] != "https://example.com/story" {
		t.Errorf("version 1: changed_fields %v duplicate_of %v canonical_url %v", first["changed_fields"], first["duplicate_of"], first["canonical_url"])
	}
	if fmt.Sprint(second["changed_fields"]) != "[topics]" || fmt.Sprint(second["topics"]) != "[crime]" {
		t.Errorf("version 2: changed_fields %v topics %v", second["changed_fields"], second["topics"])
	}
	dup, _ := second["duplicate_of"].(map[string]any)
	if dup["index"] != "wire_raw_content" || dup["id"] != "w-1" || dup["kind"] != "content" {
		t.Errorf("version 2: duplicate_of %v", second["duplicate_of"])
	}
}

// The subscriber sees the ToPublishMessage body, field by field, on the
// channel of each routing case; the channel column the API filters on
// agrees with RoutingKey.
func TestSubscriberReceivesSpecMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rdb := testenv.Redis(t)
	sub := outboxtest.Subscribe(t, rdb)
	prefix := testenv.UniqueName("body")
	published := time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC)
	cases := []struct {
		name, contentType, channel string
		crime                      bool
		subcategory                *string
	}{
		{"crime with subcategory", "article", "articles:crime:violent_crime", true, ptr("violent_crime")},
		{"crime without subcategory", "article", "articles:crime", true, nil},
		{"article", "article", "articles:news", false, nil},
		{"video", "video", "content:video", false, nil},
		{"image", "image", "content:image", false, nil},
		{"other", "page", "content:other", false, nil},
	}
	var rows []outboxtest.Row
	for i, c := range cases {
		rows = append(rows, outboxtest.Row{
			ContentID: fmt.Sprintf("%s-%d", prefix, i), SourceName: "example_com", ContentType: c.contentType,
			Topics: []string{"crime", "local"}, QualityScore: 40 + i, IsCrimeRelated: c.crime, CrimeSubcategory: c.subcategory,
			Title: "Title " + c.name, Body: "Body " + c.name, URL: "https://example.com/" + c.name, PublishedDate: &published,
		})
	}
	rows[5].PublishedDate = nil
	before := time.Now().Add(-time.Second)
	outboxtest.Insert(t, b.db, rows)
	b.startWorker(t, worker.Config{}, rdb)

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := rows[i].ContentID
			outboxtest.WaitFor(t, time.Minute, "message for "+id, func() bool { return len(sub.Messages(id)) > 0 })
			msgs := sub.Messages(id)
			if len(msgs) != 1 {
				t.Fatalf("%d messages, want 1", len(msgs))
			}
			m := msgs[0]
			var outboxID, dbChannel string
			if err := b.db.QueryRow(`SELECT id, channel FROM classified_outbox WHERE content_id = $1`, id).Scan(&outboxID, &dbChannel); err != nil {
				t.Fatal(err)
			}
			var wantSub any
			if c.subcategory != nil {
				wantSub = *c.subcategory
			}
			var wantDate any = "2026-11-20T08:30:00Z"
			if rows[i].PublishedDate == nil {
				wantDate = nil
			}
			want := map[string]any{
				"_channel": c.channel, "id": id, "source": "example_com", "index": "example_com_classified_content",
				"content_type": c.contentType, "quality_score": float64(40 + i), "is_crime_related": c.crime,
				"crime_subcategory": wantSub, "title": rows[i].Title, "body": rows[i].Body, "url": rows[i].URL,
				"published_date": wantDate, "version": float64(1), "changed_fields": nil, "canonical_url": nil,
				"duplicate_of": nil,
			}
			for k, v := range want {
				if m[k] != v {
					t.Errorf("%s = %#v, want %#v", k, m[k], v)
				}
			}
			if topics := fmt.Sprint(m["topics"]); topics != "[crime local]" {
				t.Errorf("topics = %s", topics)
			}
			pub, _ := m["publisher"].(map[string]any)
			if pub["outbox_id"] != outboxID || pub["channel"] != c.channel {
				t.Errorf("publisher = %v, want outbox_id %s channel %s", pub, outboxID, c.channel)
			}
			at, err := time.Parse(time.RFC3339, fmt.Sprint(pub["published_at"]))
			if err != nil || at.Before(before.Truncate(time.Second)) || at.After(time.Now().Add(time.Second)) {
				t.Errorf("publisher.published_at = %v (%v)", pub["published_at"], err)
			}
			if len(m) != len(want)+2 || len(pub) != 3 {
				t.Errorf("message has fields %v, want exactly the spec's", keys(m))
			}
			if dbChannel != c.channel {
				t.Errorf("channel column %q, RoutingKey %q", dbChannel, c.channel)
			}
		})
	}
}

// With PUBLISHER_STREAM_MIRROR each message is also in a capped stream per
// channel, readable by a consumer that was not subscribed.
func TestStreamMirror(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	outboxtest.Insert(t, b.db, outboxtest.Rows("mirror", 20))
	b.startWorkerSink(t, worker.Config{}, mirrorSink(t, rs.Client(), sink.MirrorConfig{MaxLen: 10}))
	outboxtest.WaitFor(t, time.Minute, "rows published", func() bool { return outboxtest.Counts(t, b.db)["published"] == 20 })
	msgs, err := rs.Client().XRevRangeN(context.Background(), sink.StreamPrefixDefault+"articles:news", "+", "-", 1).Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("xrevrange: %v %v", msgs, err)
	}
	if body := fmt.Sprint(msgs[0].Values["message"]); !strings.Contains(body, `"id":"mirror-`) || !strings.Contains(body, `"channel":"articles:news"`) {
		t.Errorf("stream entry %s", body)
	}
	if n, err := rs.Client().XLen(context.Background(), sink.StreamPrefixDefault+"articles:news").Result(); err != nil || n > 20 {
		t.Errorf("stream length %d %v", n, err)
	}
}

// Zero receivers is recorded, not an error; the spec's metric names appear
// on /metrics exactly.
func TestMetricsExposedUnderSpecNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	outboxtest.Insert(t, b.db, outboxtest.Rows("metrics", 5))
	outboxtest.Insert(t, b.db, []outboxtest.Row{{ContentID: "metrics-pending", SourceName: "s", ContentType: "article", Title: "t", URL: "u"}})
	w := b.newWorker(t, worker.Config{BatchSize: 5}, b.repo, rs.Client())
	if n, err := w.DrainOnce(context.Background()); n != 5 || err != nil {
		t.Fatalf("drain: %d %v", n, err)
	}
	m := b.scrape(t)
	for _, want := range []string{
		`classifier_outbox_published_total{channel="articles:news"} 5`,
		`classifier_outbox_publish_lag_seconds_bucket{channel="articles:news",le="+Inf"} 5`,
		`classifier_outbox_publish_lag_seconds_count{channel="articles:news"} 5`,
		`classifier_outbox_backlog{status="pending"} 1`,
		`classifier_outbox_backlog{status="failed"} 0`,
		`publisher_publish_no_receivers_total{channel="articles:news"} 5`,
		`publisher_redis_breaker_state 0`,
		`publisher_breaker_state{dependency="redis"} 0`,
		`publisher_breaker_state{dependency="postgres"} 0`,
		`publisher_outbox_oldest_pending_age_seconds `,
		`publisher_outbox_batch_size_count 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(m, "target_info") || strings.Contains(m, "_total_total") || strings.Contains(m, "otel_scope") {
		t.Errorf("/metrics has exporter artefacts:\n%s", grep(m, "total_total|target_info|otel_scope"))
	}
	if got := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE status = 'published'`); got != 5 {
		t.Errorf("%d published with no receivers, want 5", got)
	}
}

// Re-inserting a content id that is already in the outbox (the classifier's
// INSERT ... ON CONFLICT DO NOTHING) changes nothing and publishes nothing,
// whatever the row's state; once cleanup has deleted the row, the same id
// is a new row and is published again. See README.md.
func TestReinsertionOfExistingContentID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := outboxtest.StartRedis(t)
	sub := outboxtest.Subscribe(t, rs.Client())
	ctx := context.Background()
	row := outboxtest.Rows("reins", 1)
	outboxtest.Insert(t, b.db, row)
	changed := row[0]
	changed.Title = "A new title"
	outboxtest.Insert(t, b.db, []outboxtest.Row{changed}) // while pending
	if got := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE content_id = 'reins-0' AND title = 'Title 0'`); got != 1 {
		t.Fatalf("re-insert while pending changed the row")
	}
	w := b.newWorker(t, worker.Config{}, b.repo, rs.Client())
	if _, err := w.DrainOnce(ctx); err != nil {
		t.Fatal(err)
	}
	outboxtest.Insert(t, b.db, []outboxtest.Row{changed}) // after publishing
	if n, err := w.DrainOnce(ctx); n != 0 || err != nil {
		t.Fatalf("re-insert after publish was claimed: %d %v", n, err)
	}
	if got := b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE content_id = 'reins-0' AND status = 'published' AND title = 'Title 0'`); got != 1 {
		t.Fatalf("re-insert after publish changed the row")
	}
	// Cleanup (retention passed) forgets the id: the next insert is new.
	if _, err := b.db.Exec(`UPDATE classified_outbox SET published_at = NOW() - INTERVAL '8 days'`); err != nil {
		t.Fatal(err)
	}
	if n, err := b.repo.CleanupPublished(ctx, 7*24*time.Hour, 100); n != 1 || err != nil {
		t.Fatalf("cleanup: %d %v", n, err)
	}
	outboxtest.Insert(t, b.db, []outboxtest.Row{changed})
	if n, err := w.DrainOnce(ctx); n != 1 || err != nil {
		t.Fatalf("insert after cleanup: claimed %d %v, want 1", n, err)
	}
	outboxtest.WaitFor(t, time.Minute, "two deliveries", func() bool { return len(sub.Messages("reins-0")) == 2 })
	msgs := sub.Messages("reins-0")
	if msgs[0]["title"] != "Title 0" || msgs[1]["title"] != "A new title" {
		t.Errorf("titles %v then %v", msgs[0]["title"], msgs[1]["title"])
	}
}

// The rescuer returns rows left publishing past the stale age to pending,
// and leaves fresh claims alone; the cleaner deletes old published rows and
// nothing else.
func TestRescuerAndCleaner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	outboxtest.Insert(t, b.db, outboxtest.Rows("maint", 6))
	exec := func(q string) {
		t.Helper()
		if _, err := b.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE classified_outbox SET status = 'publishing', updated_at = NOW() - INTERVAL '10 minutes' WHERE content_id = 'maint-0'`)
	exec(`UPDATE classified_outbox SET status = 'publishing' WHERE content_id = 'maint-1'`)
	exec(`UPDATE classified_outbox SET status = 'published', published_at = NOW() - INTERVAL '2 hours' WHERE content_id IN ('maint-2', 'maint-3')`)
	exec(`UPDATE classified_outbox SET status = 'published', published_at = NOW() WHERE content_id = 'maint-4'`)
	exec(`UPDATE classified_outbox SET status = 'failed', retry_count = 5, updated_at = NOW() - INTERVAL '2 hours' WHERE content_id = 'maint-5'`)

	log := testenv.Logger(t)
	r := worker.NewRescuer(worker.RescuerConfig{StaleAfter: 5 * time.Minute, Interval: 20 * time.Millisecond}, b.repo, b.metrics, log)
	c := worker.NewCleaner(worker.CleanerConfig{Retention: time.Hour, Interval: 20 * time.Millisecond}, b.repo, b.metrics, log)
	for _, comp := range []interface {
		Start(context.Context) error
		Stop(context.Context) error
	}{r, c} {
		if err := comp.Stop(context.Background()); err != nil { // safe before start
			t.Fatal(err)
		}
	}
	r = worker.NewRescuer(worker.RescuerConfig{StaleAfter: 5 * time.Minute, Interval: 20 * time.Millisecond}, b.repo, b.metrics, log)
	c = worker.NewCleaner(worker.CleanerConfig{Retention: time.Hour, Interval: 20 * time.Millisecond}, b.repo, b.metrics, log)
	for _, comp := range []interface {
		Start(context.Context) error
		Stop(context.Context) error
	}{r, c} {
		if err := comp.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := comp.Start(context.Background()); err != nil { // idempotent
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = comp.Stop(context.Background()) })
	}
	outboxtest.WaitFor(t, time.Minute, "rescue and cleanup", func() bool {
		return b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE content_id = 'maint-0' AND status = 'pending'`) == 1 &&
			b.count(t, `SELECT COUNT(*) FROM classified_outbox WHERE content_id IN ('maint-2', 'maint-3')`) == 0
	})
	got := map[string]string{}
	rows, err := b.db.Query(`SELECT content_id, status FROM classified_outbox`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, s string
		_ = rows.Scan(&id, &s)
		got[id] = s
	}
	want := map[string]string{"maint-0": "pending", "maint-1": "publishing", "maint-4": "published", "maint-5": "failed"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	for _, s := range []string{`publisher_outbox_rescued_total 1`, `publisher_outbox_cleaned_total 2`} {
		if m := b.scrape(t); !strings.Contains(m, s) {
			t.Errorf("/metrics lacks %q", s)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func grep(s, pattern string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, p := range strings.Split(pattern, "|") {
			if strings.Contains(line, p) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

var _ = redis.Nil
