// Command loader writes generated raw documents into {source}_raw_content,
// standing in for the crawler in demos and tests.
//
//	loader -count 200 -sources demo_news,demo_metro [-seed 1] [-refresh]
//	loader -shape crawler -html-kb 20-200 -dup-rate 0.03 -count 20000 ...
//
// The simple shape (the default) writes short texts from a few sentences;
// the crawler shape writes texts of 2-8 KB from a 20,000-word vocabulary,
// each with its page (raw_html, -html-kb), and a share of syndicated
// copies (-dup-rate). Documents are generated batch by batch, each bulk
// request bounded by -max-bulk-mb, so a large corpus of large pages never
// sits in memory whole. The last line of output gives bulk_seconds, the
// time spent in bulk requests alone (generation excluded).
//
// With -rate N the documents are written one index request each, N a
// second on a fixed schedule (a crawler's steady arrival, not a backfill),
// and each acknowledged write is printed as "indexed <source> <id>
// <unix nanoseconds>", for a latency benchmark to time from. A write that
// Elasticsearch did not take (no connection, 429, 5xx: a node restarting)
// is tried again, as a crawler would, for up to 5 minutes; its time is that
// of the write that was acknowledged.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/north-cloud/classifier/internal/loadgen"
	"github.com/north-cloud/infrastructure/backoff"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/logger"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loader:", err)
		os.Exit(1)
	}
}

func run() error {
	count := flag.Int("count", 200, "documents to write, spread over the sources")
	sources := flag.String("sources", "demo_news,demo_metro,demo_sports", "comma-separated source names")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (the same seed writes the same corpus)")
	batch := flag.Int("batch", 500, "documents per bulk request")
	refresh := flag.Bool("refresh", false, "refresh the raw indices at the end so the documents are searchable at once")
	priority := flag.String("priority", "", `the documents' priority level: critical, high, normal, low or cleanup (empty: their source's level); "low" marks them as a backfill, taken after fresh documents with the share of capacity kept for the backlog`)
	age := flag.Duration("age", 0, "crawl the documents this long ago (a backfill of old news), spread over the hour before")
	shape := flag.String("shape", "simple", `"simple" (short texts) or "crawler" (real-length texts, pages, copies)`)
	htmlKB := flag.String("html-kb", "20-200", "crawler shape: raw_html size in KB, MIN-MAX or one size; 0 writes no page (text only)")
	dupRate := flag.Float64("dup-rate", loadgen.DuplicateRateDefault, "crawler shape: share of documents that copy an earlier text (half exactly, half nearly)")
	maxBulkMB := flag.Int("max-bulk-mb", 16, "most bytes of documents per bulk request, in MB")
	rate := flag.Float64("rate", 0, "documents per second, one index request each, printing each write's time (0: bulk as fast as possible)")
	flag.Parse()

	l := config.New()
	esCfg := esclient.ConfigFromEnv(l)
	logCfg := logger.ConfigFromEnv(l, "loader")
	if err := l.Err(); err != nil {
		return err
	}
	if *count < 0 || *batch <= 0 || *age < 0 || *maxBulkMB <= 0 {
		return fmt.Errorf("-count must be >= 0, -batch > 0, -max-bulk-mb > 0 and -age >= 0")
	}
	next, copies, err := generator(*shape, *seed, *htmlKB, *dupRate)
	if err != nil {
		return err
	}
	if _, ok := contentindex.PriorityValue(*priority); !ok {
		return fmt.Errorf("-priority must be one of %s, or empty (got %q)", strings.Join(contentindex.Priorities(), ", "), *priority)
	}
	names := strings.Split(*sources, ",")
	for _, s := range names {
		if !contentindex.ValidSource(s) {
			return fmt.Errorf("invalid source name %q: use lowercase letters, digits, '_' and '-'", s)
		}
	}
	log, err := logger.New(os.Stderr, logCfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	es, err := contentindex.Connect(ctx, esCfg, log)
	if err != nil {
		return err
	}

	if *rate > 0 {
		return steady(ctx, es, *count, *rate, func(i int) contentindex.RawDocument {
			d := next(names[i%len(names)], i)
			d.Priority = *priority
			d.CrawledAt = d.CrawledAt.Add(-*age)
			return d
		})
	}
	start := time.Now()
	lastReport := time.Time{}
	var bulkTime time.Duration
	maxBytes := *maxBulkMB << 20
	docs := make([]contentindex.RawDocument, 0, *batch)
	size := 0
	flush := func(done int) error {
		if len(docs) == 0 {
			return nil
		}
		t := time.Now()
		if err := loadgen.Load(ctx, es, docs, len(docs), nil); err != nil {
			return err
		}
		bulkTime += time.Since(t)
		docs, size = docs[:0], 0
		if time.Since(lastReport) > time.Second || done == *count {
			lastReport = time.Now()
			fmt.Fprintf(os.Stderr, "loaded %d/%d documents (%.0f docs/s)\n", done, *count, float64(done)/time.Since(start).Seconds())
		}
		return nil
	}
	for i := range *count {
		d := next(names[i%len(names)], i)
		d.Priority = *priority
		d.CrawledAt = d.CrawledAt.Add(-*age)
		docs = append(docs, d)
		size += len(d.RawText) + len(d.RawHTML) + 1024
		if len(docs) == *batch || size >= maxBytes {
			if err := flush(i + 1); err != nil {
				return err
			}
		}
	}
	if err := flush(*count); err != nil {
		return err
	}
	if *refresh {
		idx := make([]string, len(names))
		for i, s := range names {
			idx[i] = contentindex.RawIndex(s)
		}
		res, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(idx...), es.Indices.Refresh.WithContext(ctx))
		if err := esclient.CheckResponse("refresh raw indices", res, err); err != nil {
			return err
		}
		res.Body.Close()
	}
	fmt.Printf("loaded %d documents into %d sources in %s (%s) bulk_seconds=%.3f\n", *count, len(names),
		time.Since(start).Round(time.Millisecond), copies(), bulkTime.Seconds())
	return nil
}

// generator returns the document maker of a shape and a summary of the
// copies it wrote.
func generator(shape string, seed uint64, htmlKB string, dupRate float64) (func(string, int) contentindex.RawDocument, func() string, error) {
	switch shape {
	case "simple":
		gen := loadgen.NewGenerator(seed)
		return gen.Document, func() string { return "simple shape" }, nil
	case "crawler":
		textOnly := strings.TrimSpace(htmlKB) == "0"
		if textOnly {
			htmlKB = "1" // pages are drawn, then dropped: the texts are those of any other size
		}
		lo, hi, err := parseRange(htmlKB)
		if err != nil {
			return nil, nil, fmt.Errorf("-html-kb: %w", err)
		}
		c, err := loadgen.NewCrawler(seed, loadgen.CrawlerConfig{HTMLMinBytes: lo << 10, HTMLMaxBytes: hi << 10, DuplicateRate: dupRate})
		if err != nil {
			return nil, nil, err
		}
		next := func(source string, n int) contentindex.RawDocument {
			d, _ := c.Document(source, n)
			if textOnly {
				d.RawHTML = ""
			}
			return d
		}
		pages := htmlKB + " KB"
		if textOnly {
			pages = "none"
		}
		summary := func() string {
			cp := c.Copies()
			return fmt.Sprintf("crawler shape, pages %s, exact_copies=%d near_copies=%d", pages, cp[loadgen.ExactCopy], cp[loadgen.NearCopy])
		}
		return next, summary, nil
	default:
		return nil, nil, fmt.Errorf("-shape must be simple or crawler (got %q)", shape)
	}
}

// parseRange reads "MIN-MAX" or "N" (N-N) of positive integers.
func parseRange(s string) (lo, hi int, err error) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		b = a
	}
	if lo, err = strconv.Atoi(strings.TrimSpace(a)); err == nil {
		hi, err = strconv.Atoi(strings.TrimSpace(b))
	}
	if err != nil || lo <= 0 || hi < lo {
		return 0, 0, fmt.Errorf("want MIN-MAX or N, positive, MIN <= MAX (got %q)", s)
	}
	return lo, hi, nil
}

// steadyWriters bounds the index requests in flight in steady mode: enough
// that slow requests do not hold up the schedule. At 100 documents/s, 8 kept
// it only while a write took under 80 ms; a one-hour soak on a busy machine
// fell minutes behind (2026-11-29). 32 keep it up to 320 ms.
const steadyWriters = 32

// steadyRetryBudget bounds how long one steady write is tried again.
const steadyRetryBudget = 5 * time.Minute

// retryable reports an error of a write that a crawler tries again: no
// answer (a node down or restarting), 429 (back-pressure) or a 5xx. Any
// other answer (a 4xx: a mapping refusal) is the document's, not the node's.
func retryable(err error) bool {
	var re *esclient.ResponseError
	if !errors.As(err, &re) {
		return true
	}
	return re.Status == http.StatusTooManyRequests || re.Status >= http.StatusInternalServerError
}

// steady writes count documents, one index request each, the i-th at
// start + i/rate, and prints each acknowledged write with its time.
func steady(ctx context.Context, es *esclient.Client, count int, rate float64, doc func(int) contentindex.RawDocument) error {
	jobs := make(chan contentindex.RawDocument, steadyWriters)
	errc := make(chan error, steadyWriters)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var retried atomic.Int64
	policy := backoff.Policy{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}
	write := func(ctx context.Context, d contentindex.RawDocument, body []byte) error {
		res, err := es.Index(contentindex.RawIndex(d.SourceName), bytes.NewReader(body),
			es.Index.WithDocumentID(d.ID), es.Index.WithContext(ctx))
		if err := esclient.CheckResponse("index raw document", res, err); err != nil {
			if !retryable(err) {
				return backoff.Permanent(err)
			}
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return nil
	}
	for range steadyWriters {
		wg.Go(func() {
			for d := range jobs {
				body, err := json.Marshal(d)
				if err != nil {
					errc <- fmt.Errorf("encode %s: %w", d.ID, err)
					return
				}
				err = backoff.Retry(ctx, policy, steadyRetryBudget, func(ctx context.Context) error { return write(ctx, d, body) },
					func(int, error, time.Duration) { retried.Add(1) })
				if err != nil {
					errc <- fmt.Errorf("write %s/%s: %w", d.SourceName, d.ID, err)
					return
				}
				at := time.Now()
				mu.Lock()
				fmt.Printf("indexed %s %s %d\n", d.SourceName, d.ID, at.UnixNano())
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	var err error
schedule:
	for i := range count {
		d := doc(i)
		if wait := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case jobs <- d:
		case err = <-errc:
			break schedule
		case <-ctx.Done():
			err = ctx.Err()
			break schedule
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	if err != nil {
		return fmt.Errorf("steady load: %w", err)
	}
	fmt.Fprintf(os.Stderr, "wrote %d documents at %.1f docs/s (%d attempts tried again)\n", count, float64(count)/time.Since(start).Seconds(), retried.Load())
	return nil
}
