package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

// oneIndexDocsDefault is the backlog of BenchmarkDrainOneIndex: a crawler's
// run into one source. BENCH_ONEINDEX_DOCS overrides it.
const oneIndexDocsDefault = 3000

// BenchmarkDrainOneIndex measures the classifier at its defaults (only its
// index pattern set) draining one raw index of real-length articles (loader
// -shape crawler: 2-8 KB texts, 3% syndicated copies), timed from its start
// to the last classified document, twice: with new ids, then with the same
// documents after the index was deleted and created again (a crawler's
// re-run, an operator's delete and create), the classifier started afresh
// each time. Sub-benchmarks: text only (no raw_html) and inside 80 KB pages.
// It reports:
//   - es_bulk_docs/s: the loader's bare _bulk rate for the same documents
//     (time in bulk requests only), the ceiling;
//   - classified_docs/s and x_of_es_bulk for the new ids;
//   - recreated_docs/s and x_recreated_of_new: the rate in the recreated
//     index, and its share of the new ids' rate (a claim that outlived its
//     index used to hold the recreated documents back for a minute).
//
// It sizes its own workload: run it with -benchtime 1x.
func BenchmarkDrainOneIndex(b *testing.B) {
	for _, v := range []struct{ name, htmlKB string }{{"text", "0"}, {"pages80KB", "80"}} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				drainOneIndex(b, v.htmlKB)
			}
		})
	}
}

func drainOneIndex(b *testing.B, htmlKB string) {
	n := envInt(b, "BENCH_ONEINDEX_DOCS", oneIndexDocsDefault)
	classifierDB := testenv.Postgres(b)
	publisherDB := testenv.Postgres(b)
	es, prefix := testenv.Elasticsearch(b)
	migrateOutbox(b, publisherDB)
	source := prefix + "_one"
	index := contentindex.RawIndex(source)

	load := func() float64 {
		out := runLoader(b, nil, "-count", strconv.Itoa(n), "-sources", source,
			"-seed", "13", "-shape", "crawler", "-html-kb", htmlKB, "-refresh")
		b.Logf("loader: %s", lastLine(out))
		settleMerges(b, es)
		return float64(n) / loaderBulkSeconds(b, out)
	}
	// drain starts the classifier at its defaults and returns the rate at
	// which it classified every document of the index.
	drain := func(what string) float64 {
		cmd, logs := benchClassifier(b, classifierDB, publisherDB, index, nil)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}()
		deadline := start.Add(10 * time.Minute)
		for countStatus(b, es, prefix, contentindex.StatusClassified)+countStatus(b, es, prefix, contentindex.StatusFailed) < n {
			if time.Now().After(deadline) {
				b.Fatalf("%s: not every document classified within 10 minutes\n%s", what, logs.Tail(20))
			}
			time.Sleep(50 * time.Millisecond)
		}
		elapsed := time.Since(start)
		if failed := countStatus(b, es, prefix, contentindex.StatusFailed); failed != 0 {
			b.Errorf("%s: %d documents failed", what, failed)
		}
		b.Logf("%s: %d documents in %s", what, n, elapsed.Round(time.Millisecond))
		return float64(n) / elapsed.Seconds()
	}

	b.ResetTimer()
	bulkRate := load()
	fresh := drain("new ids")
	res, err := es.Indices.Delete([]string{index})
	if err := esclient.CheckResponse("delete "+index, res, err); err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
	load()
	recreated := drain("recreated index, same ids")
	b.StopTimer()
	b.ReportMetric(bulkRate, "es_bulk_docs/s")
	b.ReportMetric(fresh, "classified_docs/s")
	b.ReportMetric(fresh/bulkRate, "x_of_es_bulk")
	b.ReportMetric(recreated, "recreated_docs/s")
	b.ReportMetric(recreated/fresh, "x_recreated_of_new")
}
