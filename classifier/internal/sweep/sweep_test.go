package sweep_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"github.com/north-cloud/classifier/internal/dbtest"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/sweep"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

type bundle struct {
	es       *esclient.Client
	prefix   string
	db       *sql.DB
	dlq      *deadletter.Repository
	newsRaw  string
	metroRaw string
}

// setup writes two raw indices: news with 3 admissible pending documents,
// 3 pending ones refused for their url (two missing, one file://), one with
// neither text nor title, one that does not decode (word_count is text),
// and a classified one with a missing url (not pending: not swept); metro
// with a source_name over 255 characters and a url over the test's 64-byte
// limit.
func setup(t *testing.T) *bundle {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	db, _ := dbtest.Migrated(t)
	b := &bundle{es: es, prefix: prefix, db: db, dlq: deadletter.NewRepository(db),
		newsRaw: contentindex.RawIndex(prefix + "news"), metroRaw: contentindex.RawIndex(prefix + "metro")}

	now := time.Now()
	doc := func(source, id string, mod func(*contentindex.RawDocument)) contentindex.RawDocument {
		d := rawtest.Doc(source, id, now)
		if mod != nil {
			mod(&d)
		}
		return d
	}
	news := prefix + "news"
	rawtest.Write(t, es, b.newsRaw,
		doc(news, "ok-1", nil), doc(news, "ok-2", nil), doc(news, "ok-3", nil),
		doc(news, "no-url-1", func(d *contentindex.RawDocument) { d.URL = "" }),
		doc(news, "no-url-2", func(d *contentindex.RawDocument) { d.URL = "" }),
		doc(news, "file-url", func(d *contentindex.RawDocument) { d.URL = "file:///etc/passwd" }),
		doc(news, "empty", func(d *contentindex.RawDocument) { d.Title, d.RawText = "", "" }),
		doc(news, "done-no-url", func(d *contentindex.RawDocument) { d.URL, d.ClassificationStatus = "", contentindex.StatusClassified }),
	)
	rawtest.WriteJSON(t, es, b.newsRaw, map[string]any{"id": "garbled", "url": "https://news.test/g", "source_name": news,
		"title": "t", "raw_text": "body", "word_count": "many", "classification_status": "pending"})
	metro := prefix + "metro"
	rawtest.Write(t, es, b.metroRaw,
		doc(metro, "ok-1", nil),
		doc(strings.Repeat("m", 300), "long-source", nil),
		doc(metro, "long-url", func(d *contentindex.RawDocument) { d.URL = "https://metro.test/" + strings.Repeat("a", 80) }),
	)
	return b
}

func (b *bundle) sweeper(t *testing.T, cfg sweep.Config) *sweep.Sweeper {
	t.Helper()
	cfg.Raw, cfg.Pattern, cfg.DeadLetters = rawtest.Store(t, b.es), b.prefix+"*"+contentindex.RawSuffix, b.dlq
	cfg.Limits = admission.Limits{MaxURLBytes: 64}
	s, err := sweep.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func reasons(idx sweep.Index) map[string]sweep.Reason {
	out := map[string]sweep.Reason{}
	for _, r := range idx.Reasons {
		out[r.Field] = r
	}
	return out
}

func (b *bundle) deadLetters(t *testing.T) map[string]string {
	t.Helper()
	rows, err := b.db.Query(`SELECT content_id, error_code || ' ' || error_message FROM dead_letter_queue`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, msg string
		if err := rows.Scan(&id, &msg); err != nil {
			t.Fatal(err)
		}
		out[id] = msg
	}
	return out
}

// A sweep reports the pending documents the door refuses, per index and
// field, with sample ids and the classifier's own message, and changes
// nothing; with Quarantine they are dead-lettered as VALIDATION_ERROR and
// marked failed with the reason, and a second sweep finds nothing more.
func TestSweepReportsThenQuarantines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	var progress []sweep.Totals
	report, err := b.sweeper(t, sweep.Config{PageSize: 4, Progress: func(tt sweep.Totals) { progress = append(progress, tt) }}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if report.Scanned != 11 || report.Unprocessable != 7 || report.Quarantined != 0 || report.Truncated {
		t.Fatalf("report totals = %+v, want 11 scanned, 7 unprocessable, none quarantined", report.Totals)
	}
	if len(progress) < 3 || progress[len(progress)-1] != report.Totals {
		t.Errorf("progress = %+v, want one call per page ending at the totals", progress)
	}
	if len(report.Indices) != 2 || report.Indices[0].Index != b.metroRaw || report.Indices[1].Index != b.newsRaw {
		t.Fatalf("indices = %+v, want metro then news", report.Indices)
	}
	news := reasons(report.Indices[1])
	if news["url"].Count != 3 || news["raw_text"].Count != 1 || news["document"].Count != 1 || len(news) != 3 {
		t.Errorf("news reasons = %+v, want url 3, raw_text 1, document 1", report.Indices[1].Reasons)
	}
	if r := news["url"]; len(r.Samples) != 3 || !strings.HasPrefix(r.Example, "unprocessable document: url: ") {
		t.Errorf("news url reason = %+v, want 3 samples and the classifier's message", r)
	}
	metro := reasons(report.Indices[0])
	if metro["source_name"].Count != 1 || metro["url"].Count != 1 || metro["url"].Samples[0] != "long-url" {
		t.Errorf("metro reasons = %+v, want source_name 1 and url 1 (over the configured 64 bytes)", report.Indices[0].Reasons)
	}
	if n := len(b.deadLetters(t)); n != 0 {
		t.Fatalf("a report-only sweep wrote %d dead letters", n)
	}
	if st := rawtest.Statuses(t, b.es, b.newsRaw); st["no-url-1"] != contentindex.StatusPending {
		t.Fatalf("a report-only sweep changed no-url-1 to %q", st["no-url-1"])
	}

	report, err = b.sweeper(t, sweep.Config{Quarantine: true, PageSize: 4}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if report.Quarantined != 7 || report.Skipped != 0 || report.FlipErrors != 0 {
		t.Fatalf("quarantine totals = %+v, want 7 quarantined", report.Totals)
	}
	dead := b.deadLetters(t)
	if len(dead) != 7 || dead["no-url-1"] != "VALIDATION_ERROR unprocessable document: url: missing" {
		t.Fatalf("dead letters = %v, want 7 VALIDATION_ERROR rows with the door's reason", dead)
	}
	sources := rawtest.Sources(t, b.es, b.newsRaw)
	var noURL struct {
		Status string `json:"classification_status"`
		Error  string `json:"classification_error"`
	}
	if err := json.Unmarshal(sources["no-url-2"], &noURL); err != nil {
		t.Fatal(err)
	}
	if noURL.Status != contentindex.StatusFailed || noURL.Error != "VALIDATION_ERROR: unprocessable document: url: missing" {
		t.Errorf("no-url-2 = %+v, want failed with the reason", noURL)
	}
	st := rawtest.Statuses(t, b.es, b.newsRaw)
	for _, id := range []string{"ok-1", "ok-2", "ok-3"} {
		if st[id] != contentindex.StatusPending {
			t.Errorf("%s is %q, want it still pending", id, st[id])
		}
	}
	if st["done-no-url"] != contentindex.StatusClassified {
		t.Errorf("a classified document was touched: %q", st["done-no-url"])
	}

	again, err := b.sweeper(t, sweep.Config{Quarantine: true}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Scanned != 4 || again.Unprocessable != 0 || again.Quarantined != 0 {
		t.Errorf("second sweep = %+v, want the 4 admissible documents and nothing to do", again.Totals)
	}
	if n := len(b.deadLetters(t)); n != 7 {
		t.Errorf("dead letters after a second sweep = %d, want still 7", n)
	}
}

// A document that changes after the sweep read it (a classifier claims it)
// is left to its new owner, and counted as skipped.
func TestSweepLeavesAloneWhatChangedSinceRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	claimed := map[string]bool{}
	claimLater := func(sweep.Totals) {
		if len(claimed) > 0 {
			return
		}
		// After the first page, a classifier claims every refused news
		// document still pending.
		for id, st := range rawtest.Statuses(t, b.es, b.newsRaw) {
			if st != contentindex.StatusPending || strings.HasPrefix(id, "ok-") {
				continue
			}
			body := `{"doc":{"classification_status":"processing","claimed_by":"replica-1"}}`
			res, err := b.es.Update(b.newsRaw, id, strings.NewReader(body), b.es.Update.WithRefresh("true"))
			if err := esclient.CheckResponse("claim", res, err); err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			claimed[id] = true
		}
	}
	report, err := b.sweeper(t, sweep.Config{Quarantine: true, PageSize: 1, Progress: claimLater}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) == 0 || report.Skipped != int64(len(claimed)) || report.Quarantined != 7-int64(len(claimed)) {
		t.Fatalf("claimed %d after the first page; report = %+v, want them skipped and the others quarantined", len(claimed), report.Totals)
	}
	st := rawtest.Statuses(t, b.es, b.newsRaw)
	for id := range claimed {
		if st[id] != contentindex.StatusProcessing {
			t.Errorf("%s is %q, want it left processing", id, st[id])
		}
	}
}

// Limit bounds the documents read.
func TestSweepLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	report, err := b.sweeper(t, sweep.Config{Limit: 5}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if report.Scanned != 5 || !report.Truncated {
		t.Fatalf("report = %+v, want 5 scanned and truncated", report.Totals)
	}
	if _, err := sweep.New(sweep.Config{Raw: rawtest.Store(t, b.es), Quarantine: true}); err == nil {
		t.Error("New accepted Quarantine without DeadLetters")
	}
}
