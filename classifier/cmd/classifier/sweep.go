package main

// The sweep command: unprocessable documents already in the raw indices.
//
//	classifier sweep [-index PATTERN] [-quarantine] [-limit N] [-json]
//
// It reads the pending raw documents of the indices (by default those the
// classifier polls, CLASSIFIER_INDEX_PATTERN), checks each with the door
// the classifier uses (admission.Admit, with the configured limits), and
// reports per index and reason how many are unprocessable, with sample ids.
// With -quarantine it marks them failed and writes a VALIDATION_ERROR dead
// letter with the reason, as the classifier would. Progress goes to
// stderr, the report to stdout. Running it again is harmless: quarantined
// documents are no longer pending.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/sweep"
	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/postgres"
)

// sweepProgressEvery is the least time between two progress lines.
const sweepProgressEvery = 2 * time.Second

func sweepCommand(ctx context.Context, args []string) error {
	return runSweep(ctx, args, config.New(), os.Stdout, os.Stderr, nil)
}

// runSweep is the sweep command with its environment, outputs and clock
// given (a nil clock is the system clock).
func runSweep(ctx context.Context, args []string, l *config.Loader, stdout, stderr io.Writer, now clock.Clock) error {
	fl := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "usage: classifier sweep [-index PATTERN] [-quarantine] [-limit N] [-json]\n\n"+
			"Reports the pending raw documents the classifier would refuse at the door (per index and reason, with\n"+
			"sample ids); with -quarantine marks them failed and dead-letters them as VALIDATION_ERROR.\n\n")
		fl.PrintDefaults()
	}
	index := fl.String("index", "", "raw indices to sweep: names, wildcards, -exclusions (default: CLASSIFIER_INDEX_PATTERN)")
	quarantine := fl.Bool("quarantine", false, "mark the unprocessable documents failed and write their dead letters")
	limit := fl.Int("limit", 0, "read at most this many pending documents (0: all)")
	asJSON := fl.Bool("json", false, "print the report as JSON")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 || *limit < 0 {
		fl.Usage()
		return errors.New("sweep: unexpected arguments")
	}
	cfg, err := loadConfig(l)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	es, err := esclient.New(ctx, cfg.ES, logger)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	// The configured byte bound (CLASSIFIER_MAX_BULK_BYTES) bounds the
	// quarantine's flips as it does the classifier's.
	raw, err := rawindex.New(rawindex.Config{ES: es, MaxBulkBytes: cfg.Store.MaxBulkBytes, Logger: logger})
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	sc := sweep.Config{Raw: raw, Pattern: cfg.Poller.IndexPattern, Limits: cfg.Limits, Quarantine: *quarantine, Limit: *limit}
	if *index != "" {
		sc.Pattern = *index
	}
	if *quarantine {
		db, err := postgres.Open(ctx, cfg.DB, logger)
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		defer db.Close()
		if sc.DeadLetters, err = deadletter.NewRepositoryWith(db, cfg.DeadLetters); err != nil {
			return err
		}
	}
	var last time.Time
	sc.Progress = func(t sweep.Totals) {
		if n := now.Now(); n.Sub(last) >= sweepProgressEvery {
			last = n
			fmt.Fprintf(stderr, "sweep: %d pending documents read, %d unprocessable, %d quarantined\n", t.Scanned, t.Unprocessable, t.Quarantined)
		}
	}
	s, err := sweep.New(sc)
	if err != nil {
		return err
	}
	report, err := s.Run(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else if err := printSweep(stdout, report, sc); err != nil {
		return err
	}
	if report.FlipErrors > 0 {
		return fmt.Errorf("sweep: %d unprocessable documents were dead-lettered but could not be marked failed (first: %s)",
			report.FlipErrors, report.FirstFlipError)
	}
	return nil
}

func printSweep(w io.Writer, r *sweep.Report, sc sweep.Config) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tREASON\tDOCUMENTS\tSAMPLE IDS\tEXAMPLE")
	for _, idx := range r.Indices {
		for _, reason := range idx.Reasons {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", idx.Index, reason.Field, reason.Count, strings.Join(reason.Samples, " "), admission.Clip(reason.Example, 100))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s: %d pending documents read in %d indices, %d unprocessable", sc.Pattern, r.Scanned, len(r.Indices), r.Unprocessable)
	if sc.Quarantine {
		fmt.Fprintf(w, ", %d quarantined, %d left alone (changed since read), %d not marked failed", r.Quarantined, r.Skipped, r.FlipErrors)
	} else if r.Unprocessable > 0 {
		fmt.Fprint(w, " (nothing changed; -quarantine marks them failed and dead-letters them)")
	}
	if r.Truncated {
		fmt.Fprintf(w, "; stopped at -limit %d", sc.Limit)
	}
	_, err := fmt.Fprintln(w)
	return err
}
