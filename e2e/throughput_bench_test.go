package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// backlogSizeDefault is the raw backlog BenchmarkClassifierDrain classifies.
// BENCH_DRAIN_DOCS overrides it (a smaller backlog for quick iteration while
// tuning; the figures of record use the default).
const backlogSizeDefault = 100_000

// drainBacklog returns the backlog size: BENCH_DRAIN_DOCS when set.
func drainBacklog(tb testing.TB) int {
	v := os.Getenv("BENCH_DRAIN_DOCS")
	if v == "" {
		return backlogSizeDefault
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("BENCH_DRAIN_DOCS: want a positive integer, got %q", v)
	}
	return n
}

// BenchmarkClassifierDrain measures the classifier binary draining a backlog
// of 100,000 raw documents (BENCH_DRAIN_DOCS) to classified, with the default rule set, on this
// machine's real Elasticsearch and Postgres. It reports:
//   - es_bulk_docs/s: the loader's bare _bulk indexing rate for the same
//     documents, the ceiling the classifier (which must read, write and flip
//     every document) is compared with;
//   - classified_docs/s: the classifier's drain rate;
//   - peak_rss_MB: the classifier process's peak resident memory (VmHWM).
//
// It sizes its own workload: run it with -benchtime 1x.
func BenchmarkClassifierDrain(b *testing.B) {
	backlogSize := drainBacklog(b)
	classifierDB := testenv.Postgres(b)
	publisherDB := testenv.Postgres(b)
	es, prefix := testenv.Elasticsearch(b)

	// The outbox schema comes from the publisher's own migrations.
	migrate := exec.Command(binaryB(b, "publisher"), "migrate", "up")
	migrate.Env = append(os.Environ(), "PUBLISHER_DATABASE_URL="+publisherDB)
	if out, err := migrate.CombinedOutput(); err != nil {
		b.Fatalf("publisher migrate up: %v\n%s", err, out)
	}

	sources := []string{prefix + "_a", prefix + "_b", prefix + "_c", prefix + "_d"}
	start := time.Now()
	load := exec.Command(binaryB(b, "loader"), "-count", strconv.Itoa(backlogSize), "-sources", strings.Join(sources, ","),
		"-seed", "11", "-batch", "2000", "-refresh")
	if out, err := load.CombinedOutput(); err != nil {
		b.Fatalf("loader: %v\n%s", err, out)
	}
	bulkRate := float64(backlogSize) / time.Since(start).Seconds()

	b.ResetTimer()
	addr := freeAddrB(b)
	cmd := exec.Command(binaryB(b, "classifier"))
	cmd.Env = append(os.Environ(),
		"CLASSIFIER_HTTP_ADDR="+addr,
		"CLASSIFIER_DATABASE_URL="+classifierDB,
		"CLASSIFIER_OUTBOX_DATABASE_URL="+testenv.WithUser(b, publisherDB, "classifier", "classifier"),
		"CLASSIFIER_INDEX_PATTERN="+prefix+"*"+contentindex.RawSuffix,
		"CLASSIFIER_ID=bench",
		"CLASSIFIER_POLL_INTERVAL=100ms",
		"CLASSIFIER_BATCH_SIZE=500",
		"CLASSIFIER_MAX_QUEUE_DEPTH=1000",
		"CLASSIFIER_COMMIT_BATCH=500",
		"LOG_LEVEL=warn",
	)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	drainStart := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()

	deadline := time.Now().Add(20 * time.Minute)
	lastReport := time.Now()
	for {
		done := countStatus(b, es, prefix, contentindex.StatusClassified)
		if done >= backlogSize {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("classified %d of %d within 20 minutes\n%s", done, backlogSize, logs.Tail(20))
		}
		if time.Since(lastReport) > 10*time.Second {
			lastReport = time.Now()
			b.Logf("classified %d/%d (%.0f docs/s)", done, backlogSize, float64(done)/time.Since(drainStart).Seconds())
		}
		time.Sleep(250 * time.Millisecond)
	}
	elapsed := time.Since(drainStart)
	peak := peakRSSMB(b, cmd.Process.Pid)
	b.StopTimer()

	if n := countStatus(b, es, prefix, contentindex.StatusFailed); n != 0 {
		b.Errorf("%d documents failed", n)
	}
	b.ReportMetric(bulkRate, "es_bulk_docs/s")
	b.ReportMetric(float64(backlogSize)/elapsed.Seconds(), "classified_docs/s")
	b.ReportMetric(peak, "peak_rss_MB")
}

// countStatus counts raw documents under prefix with the given status.
func countStatus(tb testing.TB, es *elasticsearch.Client, prefix, status string) int {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"query": map[string]any{"term": map[string]any{"classification_status": status}}})
	res, err := es.Count(es.Count.WithContext(context.Background()), es.Count.WithIndex(prefix+"*"+contentindex.RawSuffix),
		es.Count.WithBody(bytes.NewReader(body)))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		Count int `json:"count"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		tb.Fatal(err)
	}
	return parsed.Count
}

// peakRSSMB reads a process's peak resident set size (VmHWM) in MB.
func peakRSSMB(tb testing.TB, pid int) float64 {
	tb.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb / 1024
		}
	}
	tb.Fatal("no VmHWM in /proc status")
	return 0
}
