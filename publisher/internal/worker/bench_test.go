package worker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/publisher/internal/outboxtest"
	"github.com/north-cloud/publisher/internal/worker"
)

// Each benchmark sizes its own workload (scripts/bench.sh runs them with
// -benchtime 1x) and reports its figures with b.ReportMetric.

// BenchmarkDrain100k drains 100,000 pending rows with one worker to one
// pattern subscriber, and measures redis-benchmark's pipelined PUBLISH on the
// same Redis as the ceiling.
func BenchmarkDrain100k(b *testing.B) {
	const rows = 100000
	for _, batch := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			bn := setup(b)
			rs := outboxtest.StartRedis(b)
			outboxtest.Insert(b, bn.db, outboxtest.Rows("drain", rows))
			if _, err := bn.db.Exec(`VACUUM ANALYZE classified_outbox`); err != nil {
				b.Fatal(err)
			}
			var received atomic.Int64
			countMessages(b, rs.Client(), &received)

			b.ResetTimer()
			start := time.Now()
			bn.startWorker(b, worker.Config{BatchSize: batch}, rs.Client())
			outboxtest.WaitFor(b, 10*time.Minute, "all rows received", func() bool { return received.Load() >= rows })
			elapsed := time.Since(start)
			b.StopTimer()
			if got := outboxtest.Counts(b, bn.db)["published"]; got != rows {
				outboxtest.WaitFor(b, time.Minute, "all rows marked", func() bool { return outboxtest.Counts(b, bn.db)["published"] == rows })
			}
			b.ReportMetric(float64(rows)/elapsed.Seconds(), "msgs/s")
			if batch == 1000 {
				b.ReportMetric(redisBenchmarkPublish(b, rs.Port), "redis-benchmark-publish-req/s")
			}
		})
	}
}

// BenchmarkPublishLag inserts 1,000 rows per second, one INSERT each, for
// 60 seconds (PUBLISHER_BENCH_LAG_SECONDS overrides) against a worker with
// the default configuration (LISTEN/NOTIFY, 5s fallback poll), and reports
// the latency from the start of each INSERT to the subscriber's receipt.
func BenchmarkPublishLag(b *testing.B) {
	seconds := 60
	if v, err := strconv.Atoi(os.Getenv("PUBLISHER_BENCH_LAG_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	const rate = 1000
	total := seconds * rate
	bn := setup(b)
	rs := outboxtest.StartRedis(b)
	sent := make([]time.Time, total)
	lags := make([]time.Duration, total)
	var receivedN atomic.Int64
	ctx := context.Background()
	ps := rs.Client().PSubscribe(ctx, "articles:*")
	if _, err := ps.Receive(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ps.Close() })
	var mu sync.Mutex
	idPattern := regexp.MustCompile(`"id":"lag-(\d+)"`)
	go func() {
		for m := range ps.Channel(redis.WithChannelSize(100000)) {
			now := time.Now()
			match := idPattern.FindStringSubmatch(m.Payload)
			if match == nil {
				continue
			}
			i, _ := strconv.Atoi(match[1])
			mu.Lock()
			if lags[i] == 0 {
				lags[i] = now.Sub(sent[i])
				receivedN.Add(1)
			}
			mu.Unlock()
		}
	}()
	bn.startWorker(b, worker.Config{PollInterval: worker.PollIntervalDefault}, rs.Client())
	rows := outboxtest.Rows("lag", total)

	b.ResetTimer()
	jobs := make(chan int, 1000)
	var wg sync.WaitGroup
	var insertErr atomic.Value
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				mu.Lock()
				sent[i] = time.Now()
				mu.Unlock()
				if err := outboxtest.InsertErr(ctx, bn.db, rows[i:i+1]); err != nil {
					insertErr.Store(err)
				}
			}
		})
	}
	start := time.Now()
	for i := range total {
		if d := time.Until(start.Add(time.Duration(i) * time.Second / rate)); d > 0 {
			time.Sleep(d)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	insertSecs := time.Since(start).Seconds()
	if err := insertErr.Load(); err != nil {
		b.Fatalf("insert: %v", err)
	}
	outboxtest.WaitFor(b, 2*time.Minute, "every message received", func() bool { return receivedN.Load() == int64(total) })
	b.StopTimer()

	mu.Lock()
	sorted := slices.Clone(lags)
	mu.Unlock()
	slices.Sort(sorted)
	ms := func(q float64) float64 {
		return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.50), "p50_ms")
	b.ReportMetric(ms(0.99), "p99_ms")
	b.ReportMetric(ms(1), "max_ms")
	b.ReportMetric(float64(total)/insertSecs, "inserts/s")
}

// countMessages counts every message on the publisher's channels.
func countMessages(b *testing.B, c *redis.Client, n *atomic.Int64) {
	ctx := context.Background()
	ps := c.PSubscribe(ctx, "articles:*", "content:*")
	if _, err := ps.Receive(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ps.Close() })
	go func() {
		for range ps.Channel(redis.WithChannelSize(100000)) {
			n.Add(1)
		}
	}()
}

// redisBenchmarkPublish runs redis-benchmark's pipelined PUBLISH of a
// message the size of ours and returns its requests per second.
func redisBenchmarkPublish(b *testing.B, port int) float64 {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		b.Logf("redis-benchmark not installed (Debian redis-tools): no ceiling figure")
		return 0
	}
	payload := strings.Repeat("x", 450)
	out, err := exec.Command("redis-benchmark", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-q", "-n", "200000", "-P", "64",
		"PUBLISH", "bench:chan", payload).CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	matches := regexp.MustCompile(`([0-9.]+) requests per second`).FindAllStringSubmatch(string(out), -1)
	if len(matches) == 0 {
		b.Fatalf("redis-benchmark output not understood:\n%s", out)
	}
	v, _ := strconv.ParseFloat(matches[len(matches)-1][1], 64)
	return v
}
