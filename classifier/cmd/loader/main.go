// Command loader writes generated raw documents into {source}_raw_content,
// standing in for the crawler in demos and tests.
//
//	loader -count 200 -sources demo_news,demo_metro [-seed 1] [-refresh]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/north-cloud/classifier/internal/loadgen"
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
	priority := flag.String("priority", "", `"low" marks the documents as a backfill: the classifier takes them after fresh documents, with the share of capacity kept for the backlog`)
	age := flag.Duration("age", 0, "crawl the documents this long ago (a backfill of old news), spread over the hour before")
	flag.Parse()

	l := config.New()
	esCfg := esclient.ConfigFromEnv(l)
	logCfg := logger.ConfigFromEnv(l, "loader")
	if err := l.Err(); err != nil {
		return err
	}
	if *count < 0 || *batch <= 0 || *age < 0 {
		return fmt.Errorf("-count must be >= 0, -batch > 0 and -age >= 0")
	}
	if *priority != "" && *priority != contentindex.PriorityLow {
		return fmt.Errorf("-priority must be %q or empty (got %q)", contentindex.PriorityLow, *priority)
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

	gen := loadgen.NewGenerator(*seed)
	docs := make([]contentindex.RawDocument, *count)
	for i := range docs {
		docs[i] = gen.Document(names[i%len(names)], i)
		docs[i].Priority = *priority
		docs[i].CrawledAt = docs[i].CrawledAt.Add(-*age)
	}
	start := time.Now()
	lastReport := time.Time{}
	err = loadgen.Load(ctx, es, docs, *batch, func(done int) {
		if time.Since(lastReport) > time.Second || done == len(docs) {
			lastReport = time.Now()
			fmt.Fprintf(os.Stderr, "loaded %d/%d documents (%.0f docs/s)\n", done, len(docs), float64(done)/time.Since(start).Seconds())
		}
	})
	if err != nil {
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
	fmt.Printf("loaded %d documents into %d sources in %s\n", len(docs), len(names), time.Since(start).Round(time.Millisecond))
	return nil
}
