package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/redisclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// replicasBacklogDefault is the backlog each replica count drains;
// BENCH_REPLICAS_DOCS overrides it.
const replicasBacklogDefault = 10_000

// BenchmarkReplicas drains the same backlog with 1, 2 and 3 classifier
// replicas, then the outbox each of the first two runs filled with 1 and 2
// publisher replicas, on whatever the environment names: the single-node
// services, or the clusters (NC_ES_NODES=3: the classifiers get every node;
// NC_REDIS_CLUSTER=1: the publishers use sharded pub/sub). The
// sub-benchmarks are named by that mode (single, es3, es3+redis-cluster,
// ...). It reports, per replica count:
//   - classified_docs/s and classified_twice (documents with more than one
//     classification in the history: a claim lost and classified again);
//   - published_msgs/s and published_twice (messages beyond one per
//     document at a subscriber of every channel).
//
// The backlog is loaded once per classifier run (bare _bulk, not timed).
// On two cores shared by everything here the point is that replicas add no
// duplicates and little overhead, not that they add speed.
func BenchmarkReplicas(b *testing.B) {
	n := replicasBacklogDefault
	if v := os.Getenv("BENCH_REPLICAS_DOCS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("BENCH_REPLICAS_DOCS: want a positive integer, got %q", v)
		}
	}
	mode := "single"
	esURL := testenv.Env(b, "ELASTICSEARCH_URL", "elasticsearch")
	if nodes := os.Getenv("NC_ES_NODES"); nodes != "" && nodes != "1" {
		mode, esURL = "es"+nodes, testenv.Env(b, "NC_ES_CLUSTER_URLS", "elasticsearch cluster")
	}
	redisURL := testenv.Env(b, "REDIS_URL", "redis")
	if redisclient.IsCluster(redisURL) {
		mode += "+redis-cluster"
	}

	outboxes := map[int]drained{} // classifier replicas -> what the run left
	for _, k := range []int{1, 2, 3} {
		// The outbox outlives the sub-benchmark that fills it: a
		// publisher run drains it later.
		outboxDB := testenv.Postgres(b)
		b.Run(fmt.Sprintf("%s/classifiers=%d", mode, k), func(b *testing.B) {
			d := drainWithClassifiers(b, esURL, outboxDB, n, k)
			outboxes[k] = d
			b.ReportMetric(d.rate, "classified_docs/s")
			b.ReportMetric(float64(d.twice), "classified_twice")
		})
	}
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("%s/publishers=%d", mode, p), func(b *testing.B) {
			d, ok := outboxes[p]
			if !ok {
				b.Fatalf("no outbox from the run with %d classifiers", p)
			}
			rate, twice := drainWithPublishers(b, redisURL, d, p)
			b.ReportMetric(rate, "published_msgs/s")
			b.ReportMetric(float64(twice), "published_twice")
		})
	}
}

// drained is what a classifier run leaves: its rate, the documents it
// classified more than once, and the publisher database holding their
// outbox rows (pending: no publisher ran), of sources under prefix.
type drained struct {
	rate     float64
	twice    int
	outboxDB string
	prefix   string
	rows     int // outbox rows to publish
}

// drainWithClassifiers loads n raw documents and times k classifier
// replicas classifying them all.
func drainWithClassifiers(b *testing.B, esURL, publisherDB string, n, k int) drained {
	classifierDB := testenv.Postgres(b)
	es, prefix := testenv.Elasticsearch(b)
	if strings.Contains(esURL, ",") {
		var err error
		if es, err = esclient.NewLazy(esclient.Config{URL: esURL}); err != nil {
			b.Fatal(err)
		}
	}
	migrateOutbox(b, publisherDB)
	sources := []string{prefix + "_a", prefix + "_b", prefix + "_c", prefix + "_d"}
	runLoader(b, []string{"ELASTICSEARCH_URL=" + esURL}, "-count", strconv.Itoa(n), "-sources", strings.Join(sources, ","),
		"-seed", "13", "-batch", "2000", "-refresh")

	// Started together, timed from the first start: each replica's start-up
	// (migrations, templates) is part of the drain, and they overlap.
	b.ResetTimer()
	start := time.Now()
	var replicas []*svc
	for i := range k {
		replicas = append(replicas, newSvc(b, "classifier", fmt.Sprintf("classifier-%d", i+1), map[string]string{
			"CLASSIFIER_DATABASE_URL":        classifierDB,
			"CLASSIFIER_OUTBOX_DATABASE_URL": testenv.WithUser(b, publisherDB, "classifier", "classifier"),
			"ELASTICSEARCH_URL":              esURL,
			"CLASSIFIER_INDEX_PATTERN":       prefix + "*" + contentindex.RawSuffix,
			"CLASSIFIER_ID":                  fmt.Sprintf("bench-%s-%d", prefix, i+1),
			"CLASSIFIER_POLL_INTERVAL":       "100ms",
			"CLASSIFIER_BATCH_SIZE":          "500",
			"CLASSIFIER_MAX_QUEUE_DEPTH":     "1000",
			"CLASSIFIER_COMMIT_BATCH":        "500",
			"LOG_LEVEL":                      "warn",
		}))
	}
	for _, r := range replicas {
		r.Start()
	}
	deadline := time.Now().Add(20 * time.Minute)
	for countStatus(b, es, prefix, contentindex.StatusClassified) < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d classifiers did not classify %d documents within 20 minutes", k, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	for _, r := range replicas {
		if ok, err := r.Terminate(30 * time.Second); !ok {
			b.Errorf("%s did not stop within 30s: %v", r.label, err)
		}
	}
	if failed := countStatus(b, es, prefix, contentindex.StatusFailed); failed != 0 {
		b.Errorf("%d documents failed", failed)
	}
	_, twice := historyTwice(b, classifierDB)
	// Documents the loader wrote twice (same URL or text) are recorded as
	// duplicates and not published: the outbox has a row per other document.
	rows, distinct := outboxRows(b, publisherDB)
	if rows != distinct || rows == 0 {
		b.Errorf("outbox has %d rows for %d distinct documents, want one per document", rows, distinct)
	}
	return drained{rate: float64(n) / elapsed.Seconds(), twice: twice, outboxDB: publisherDB, prefix: prefix, rows: rows}
}

// drainWithPublishers times p publisher replicas publishing the pending
// rows a classifier run left, counted per document at a subscriber of every
// channel; it returns the rate and the messages beyond one per document.
func drainWithPublishers(b *testing.B, redisURL string, d drained, p int) (float64, int) {
	counter := newMessageCounter(b, redisURL, d.prefix)
	b.ResetTimer()
	start := time.Now()
	var replicas []*svc
	for i := range p {
		replicas = append(replicas, newSvc(b, "publisher", fmt.Sprintf("publisher-%d", i+1), map[string]string{
			"PUBLISHER_DATABASE_URL":         d.outboxDB,
			"PUBLISHER_OUTBOX_POLL_INTERVAL": "100ms",
			"REDIS_URL":                      redisURL,
			"LOG_LEVEL":                      "warn",
		}))
	}
	for _, r := range replicas {
		r.Start()
	}
	deadline := time.Now().Add(10 * time.Minute)
	for counter.distinct() < d.rows {
		if time.Now().After(deadline) {
			b.Fatalf("%d publishers delivered %d of %d documents within 10 minutes\n%s", p, counter.distinct(), d.rows, replicas[0].Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	time.Sleep(time.Second) // a second copy would arrive right behind the first
	for _, r := range replicas {
		if ok, err := r.Terminate(30 * time.Second); !ok {
			b.Errorf("%s did not stop within 30s: %v", r.label, err)
		}
	}
	return float64(d.rows) / elapsed.Seconds(), counter.total() - counter.distinct()
}

// messageCounter counts the publisher's messages per document of the
// sources under a prefix, on every channel: PSUBSCRIBE on one Redis,
// SSUBSCRIBE per channel on a cluster.
type messageCounter struct {
	mu    sync.Mutex
	byDoc map[string]int
	n     int
}

func newMessageCounter(tb testing.TB, redisURL, prefix string) *messageCounter {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &messageCounter{byDoc: map[string]int{}}
	var wg sync.WaitGroup
	var subs []*redis.PubSub
	var client redis.UniversalClient
	if redisclient.IsCluster(redisURL) {
		opts, err := redisclient.ParseCluster(redisURL)
		if err != nil {
			tb.Fatal(err)
		}
		cc := redis.NewClusterClient(opts)
		client = cc
		for _, ch := range publisherChannels {
			subs = append(subs, cc.SSubscribe(ctx, ch))
		}
	} else {
		opts, err := redis.ParseURL(redisURL)
		if err != nil {
			tb.Fatal(err)
		}
		client = redis.NewClient(opts)
		subs = append(subs, client.PSubscribe(ctx, "articles:*", "content:*"))
	}
	for _, ps := range subs {
		if _, err := ps.Receive(ctx); err != nil {
			cancel()
			tb.Fatalf("subscribe: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				msg, err := ps.Receive(ctx)
				if ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
					return
				}
				m, ok := msg.(*redis.Message)
				if err != nil || !ok {
					continue
				}
				var body message
				if json.Unmarshal([]byte(m.Payload), &body) != nil || !strings.HasPrefix(body.Source, prefix) {
					continue
				}
				c.mu.Lock()
				c.byDoc[docKey(body.Source, body.ID)]++
				c.n++
				c.mu.Unlock()
			}
		}()
	}
	tb.Cleanup(func() {
		cancel()
		for _, ps := range subs {
			_ = ps.Close()
		}
		wg.Wait()
		_ = client.Close()
	})
	return c
}

func (c *messageCounter) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byDoc)
}

func (c *messageCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
