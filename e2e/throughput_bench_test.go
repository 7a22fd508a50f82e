package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// drainDocsDefault is the raw backlog each drain benchmark classifies.
// BENCH_DRAIN_DOCS overrides it (a smaller backlog for quick iteration; the
// figures of record use the default).
const drainDocsDefault = 20_000

// commitBatchDefault is the classifier's CLASSIFIER_COMMIT_BATCH default:
// how many status flips its committer sends in one _bulk.
const commitBatchDefault = 200

// pollBatchDefault is the classifier's CLASSIFIER_BATCH_SIZE default: how
// many raw documents one poll reads.
const pollBatchDefault = 100

// drainTunedEnv are the settings of the tuned run (BenchmarkClassifierDrainTuned):
// a short poll and large batches, which no user gets without asking.
var drainTunedEnv = map[string]string{
	"CLASSIFIER_POLL_INTERVAL":   "100ms",
	"CLASSIFIER_BATCH_SIZE":      "500",
	"CLASSIFIER_MAX_QUEUE_DEPTH": "1000",
	"CLASSIFIER_COMMIT_BATCH":    "500",
}

// BenchmarkClassifierDrain measures the classifier binary, at its
// documented defaults (no CLASSIFIER_* tuning), draining a backlog of
// crawler-shaped raw documents (loader -shape crawler: 2-8 KB texts from a
// 20,000-word vocabulary, 20-200 KB pages, 3% syndicated copies; seed 11)
// to classified, on this machine's real Elasticsearch and Postgres. See
// drainBench for the figures.
func BenchmarkClassifierDrain(b *testing.B) { drainBench(b, "20-200", nil) }

// BenchmarkClassifierDrain100KB is BenchmarkClassifierDrain with every page
// 100 KB.
func BenchmarkClassifierDrain100KB(b *testing.B) { drainBench(b, "100", nil) }

// BenchmarkClassifierDrainTuned is BenchmarkClassifierDrain with the
// benchmark-only settings of drainTunedEnv; it runs only with
// BENCH_DRAIN_TUNED=1 and is never the figure of record.
func BenchmarkClassifierDrainTuned(b *testing.B) {
	if os.Getenv("BENCH_DRAIN_TUNED") != "1" {
		b.Skip("BENCH_DRAIN_TUNED=1 runs the tuned drain")
	}
	drainBench(b, "20-200", drainTunedEnv)
}

// benchClassifier prepares a classifier (not started) at its defaults on
// the raw indices of pattern, as replica "bench", logging warnings only to
// the buffer it returns, with env on top.
func benchClassifier(b *testing.B, classifierDB, publisherDB, pattern string, env map[string]string) (*exec.Cmd, *testenv.SyncBuffer) {
	cmd := exec.Command(binaryB(b, "classifier"))
	cmd.Env = append(os.Environ(),
		"CLASSIFIER_HTTP_ADDR="+freeAddrB(b),
		"CLASSIFIER_DATABASE_URL="+classifierDB,
		"CLASSIFIER_OUTBOX_DATABASE_URL="+testenv.WithUser(b, publisherDB, "classifier", "classifier"),
		"CLASSIFIER_INDEX_PATTERN="+pattern,
		"CLASSIFIER_ID=bench",
		"LOG_LEVEL=warn",
	)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	return cmd, logs
}

// drainBench loads the backlog (pages of htmlKB, loader -html-kb) into the
// raw indices of four sources with bare _bulk, then times the classifier
// with env on top of its defaults classifying all of it. It reports:
//   - es_bulk_docs/s: the loader's bare _bulk rate for the same documents
//     into the same indices (time in bulk requests only), the ceiling;
//   - classified_docs/s and x_of_es_bulk (classified_docs/s / es_bulk_docs/s);
//   - es_cpu_ms/doc: Elasticsearch's CPU time (node stats
//     process.cpu.total_in_millis) during the drain per classified document,
//     beside es_bulk_cpu_ms/doc during the bulk load per document, each
//     until the merges its writes set off have ended;
//   - es_bare_flip_cpu_ms/doc: the same for the one raw write per document
//     alone (bareFlipCPU: a plain _bulk of the conditional status updates,
//     the classifier stopped), the floor of es_cpu_ms/doc in this design;
//   - es_bare_read_cpu_ms/doc and es_bare_copy_cpu_ms/doc: the same for
//     reading each raw document once as the poller does (bareReadCPU) and
//     for writing the classified copies again (bareCopyCPU), the floors of
//     a design with no raw write at all;
//   - es_bare_id_read_cpu_ms/doc: the same for reading each raw document's
//     id and version only (idReadCPU), the floor of reading it at all;
//   - es_whatif_copy_unindexed_text_cpu_ms/doc and
//     es_whatif_stored_read_cpu_ms/doc: the same two floors if the
//     classified mapping did not index raw_text and the raw mapping stored
//     the fields the poller reads on their own (what-ifs on scratch
//     indices; neither mapping is the project's);
//   - raw_writes_per_doc: indexing operations on the raw indices during the
//     drain (primaries' index_total after, minus after the load) per
//     document;
//   - classified_twice: documents with more than one classification in the
//     history, and outbox_twice: outbox rows beyond one per document, that
//     is documents that would be published twice (both must be 0);
//   - peak_rss_MB: the classifier process's peak resident memory (VmHWM).
//
// It sizes its own workload: run it with -benchtime 1x.
func drainBench(b *testing.B, htmlKB string, env map[string]string) {
	backlogSize := envInt(b, "BENCH_DRAIN_DOCS", drainDocsDefault)
	classifierDB := testenv.Postgres(b)
	publisherDB := testenv.Postgres(b)
	es, prefix := testenv.Elasticsearch(b)

	migrateOutbox(b, publisherDB)

	sources := []string{prefix + "_a", prefix + "_b", prefix + "_c", prefix + "_d"}
	rawIndices := prefix + "*" + contentindex.RawSuffix
	esCPU := esCPUMillis(b, es)
	out := runLoader(b, nil, "-count", strconv.Itoa(backlogSize), "-sources", strings.Join(sources, ","),
		"-seed", "11", "-shape", "crawler", "-html-kb", htmlKB, "-refresh")
	// The merges the load sets off are the load's work, not the drain's.
	settleMerges(b, es)
	bulkCPU := esCPUMillis(b, es) - esCPU
	bulkSecs := loaderBulkSeconds(b, out)
	b.Logf("loader: %s", lastLine(out))
	loadedWrites := rawIndexOps(b, es, rawIndices)

	b.ResetTimer()
	cmd, logs := benchClassifier(b, classifierDB, publisherDB, rawIndices, env)
	classifiedIndices := prefix + "*" + contentindex.ClassifiedSuffix
	rawTimes, classifiedTimes := indexTimes(b, es, rawIndices), indexTimes(b, es, classifiedIndices)
	esCPU = esCPUMillis(b, es)
	drainStart := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()

	deadline := time.Now().Add(60 * time.Minute)
	lastReport := time.Now()
	for {
		// A failed document is done too (and fails the benchmark below):
		// waiting for it to be classified would wait for the deadline.
		done := countStatus(b, es, prefix, contentindex.StatusClassified) + countStatus(b, es, prefix, contentindex.StatusFailed)
		if done >= backlogSize {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("classified %d of %d within 60 minutes\n%s", done, backlogSize, logs.Tail(20))
		}
		if time.Since(lastReport) > 10*time.Second {
			lastReport = time.Now()
			b.Logf("classified %d/%d (%.0f docs/s)", done, backlogSize, float64(done)/time.Since(drainStart).Seconds())
		}
		time.Sleep(250 * time.Millisecond)
	}
	elapsed := time.Since(drainStart)
	// The merges the drain's writes set off are the drain's work.
	settleMerges(b, es)
	drainCPU := esCPUMillis(b, es) - esCPU
	b.Logf("Elasticsearch's time during the drain (ms): raw indices: %s; classified indices: %s",
		indexTimes(b, es, rawIndices).minus(rawTimes), indexTimes(b, es, classifiedIndices).minus(classifiedTimes))
	drainWrites := rawIndexOps(b, es, rawIndices) - loadedWrites
	peak := peakRSSMB(b, cmd.Process.Pid)
	b.StopTimer()

	if n := countStatus(b, es, prefix, contentindex.StatusFailed); n != 0 {
		b.Errorf("%d documents failed (classification_error on the raw documents)", n)
	}
	_, twice := historyTwice(b, classifierDB)
	rows, distinct := outboxRows(b, publisherDB)
	// The floor of the design: the one raw write per document alone, sent
	// by a plain client in the committer's default batch, with the
	// classifier stopped.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	readCPU := bareReadCPU(b, es, rawIndices, pollBatchDefault)
	idCPU := idReadCPU(b, es, rawIndices, pollBatchDefault)
	classified := scrollDocs(b, es, classifiedIndices)
	copyCPU := bareCopyCPU(b, es, classified, prefix+"_copy"+contentindex.ClassifiedSuffix,
		contentindex.ClassifiedMapping(), commitBatchDefault)
	copyUnindexedCPU := bareCopyCPU(b, es, classified, prefix+"_whatif_copy", classifiedMappingUnindexedText(), commitBatchDefault)
	storedCPU := storedReadCPU(b, es, rawIndices, prefix+"_whatif_stored", pollBatchDefault)
	flipCPU := bareFlipCPU(b, es, rawIndices, commitBatchDefault)
	bulkRate := float64(backlogSize) / bulkSecs
	rate := float64(backlogSize) / elapsed.Seconds()
	b.ReportMetric(bulkRate, "es_bulk_docs/s")
	b.ReportMetric(rate, "classified_docs/s")
	b.ReportMetric(rate/bulkRate, "x_of_es_bulk")
	b.ReportMetric(float64(drainCPU)/float64(backlogSize), "es_cpu_ms/doc")
	b.ReportMetric(float64(bulkCPU)/float64(backlogSize), "es_bulk_cpu_ms/doc")
	b.ReportMetric(flipCPU, "es_bare_flip_cpu_ms/doc")
	b.ReportMetric(readCPU, "es_bare_read_cpu_ms/doc")
	b.ReportMetric(copyCPU, "es_bare_copy_cpu_ms/doc")
	b.ReportMetric(copyUnindexedCPU, "es_whatif_copy_unindexed_text_cpu_ms/doc")
	b.ReportMetric(storedCPU, "es_whatif_stored_read_cpu_ms/doc")
	b.ReportMetric(idCPU, "es_bare_id_read_cpu_ms/doc")
	b.ReportMetric(float64(drainWrites)/float64(backlogSize), "raw_writes_per_doc")
	b.ReportMetric(float64(twice), "classified_twice")
	b.ReportMetric(float64(rows-distinct), "outbox_twice")
	b.ReportMetric(peak, "peak_rss_MB")
}

// loaderBulkSeconds reads the loader's bulk_seconds=N (time in bulk
// requests alone).
func loaderBulkSeconds(tb testing.TB, out string) float64 {
	tb.Helper()
	m := regexp.MustCompile(`bulk_seconds=([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		tb.Fatalf("loader output has no bulk_seconds:\n%s", out)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v <= 0 {
		tb.Fatalf("loader bulk_seconds %q", m[1])
	}
	return v
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// countStatus counts raw documents under prefix with the given status.
func countStatus(tb testing.TB, es *esclient.Client, prefix, status string) int {
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
