package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/sweep"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// classifier sweep, as an operator runs it: a report on stdout with the
// index, reason, count and sample ids, then -quarantine with -json, then a
// second run that finds nothing; the configured door limits apply.
func TestSweepCommand(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	_, dsn := dbtest.Migrated(t)
	source := prefix + "wire"
	raw := contentindex.RawIndex(source)
	ok := rawtest.Doc(source, "ok", time.Now())
	noURL := rawtest.Doc(source, "no-url", time.Now())
	noURL.URL = ""
	long := rawtest.Doc(source, "long-url", time.Now())
	long.URL = "https://wire.test/" + strings.Repeat("x", 200)
	rawtest.Write(t, es, raw, ok, noURL, long)
	env := map[string]string{
		"CLASSIFIER_DATABASE_URL":        dsn,
		"CLASSIFIER_OUTBOX_DATABASE_URL": dsn,
		"ELASTICSEARCH_URL":              testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch"),
		"CLASSIFIER_INDEX_PATTERN":       prefix + "*_raw_content",
		"CLASSIFIER_MAX_URL_BYTES":       "128",
		"JWT_SECRET":                     "0123456789abcdef0123456789abcdef-sweep",
	}
	run := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := runSweep(context.Background(), args, config.NewFromMap(env), &out, &errOut, nil); err != nil {
			t.Fatalf("sweep %v: %v\nstderr: %s", args, err, errOut.String())
		}
		return out.String(), errOut.String()
	}

	out, progress := run()
	if fields := strings.Fields(strings.Split(out, "\n")[1]); len(fields) < 3 || fields[0] != raw || fields[1] != "url" || fields[2] != "2" {
		t.Errorf("first row = %q, want %s url 2", fields, raw)
	}
	for _, want := range []string{"INDEX", raw, "no-url long-url", "unprocessable document: url: missing", "3 pending documents read in 1 indices, 2 unprocessable", "nothing changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(progress, "sweep: 3 pending documents read, 2 unprocessable") {
		t.Errorf("stderr lacks the progress line: %q", progress)
	}

	out, _ = run("-index", raw, "-quarantine", "-json")
	var report sweep.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("-json output %q: %v", out, err)
	}
	if report.Quarantined != 2 || len(report.Indices) != 1 || report.Indices[0].Reasons[0].Field != "url" {
		t.Fatalf("quarantine report = %+v", report)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM dead_letter_queue WHERE error_code = 'VALIDATION_ERROR' AND index_name = $1`, raw).Scan(&n); err != nil || n != 2 {
		t.Fatalf("VALIDATION_ERROR dead letters = %d (%v), want 2", n, err)
	}

	out, _ = run("-limit", "10")
	if !strings.Contains(out, "1 pending documents read in 1 indices, 0 unprocessable") {
		t.Errorf("second sweep:\n%s\nwant only the admissible document left", out)
	}
	var errOut bytes.Buffer
	if err := runSweep(context.Background(), []string{"extra"}, config.NewFromMap(env), &bytes.Buffer{}, &errOut, nil); err == nil {
		t.Error("sweep accepted a stray argument")
	}
}
