package sourcestats_test

import (
	"context"
	"database/sql"
	"github.com/north-cloud/classifier/internal/dbtest"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/sourcestats"
	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/testenv"
)

type bundle struct {
	es     *esclient.Client
	prefix string
	db     *sql.DB
	dlq    *deadletter.Repository
	now    time.Time
	reader *sourcestats.Reader
}

func setup(t *testing.T) *bundle {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	db, _ := dbtest.Migrated(t)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	reader, err := sourcestats.New(sourcestats.Config{ES: es, DB: db, RawPattern: prefix + "*" + contentindex.RawSuffix,
		Clock: clock.NewManual(now).Clock()})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{es: es, prefix: prefix, db: db, dlq: deadletter.NewRepository(db), now: now, reader: reader}
}

// refusal is the dead-letter message the committer stores for a document
// the door refuses: the pipeline's own error.
func refusal(t *testing.T, mod func(*contentindex.RawDocument)) string {
	t.Helper()
	engine, err := rules.NewEngineWithOptions(rules.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Config{Topics: engine})
	if err != nil {
		t.Fatal(err)
	}
	raw := &domain.RawContent{RawDocument: rawtest.Doc("x", "x-1", time.Now())}
	mod(&raw.RawDocument)
	_, err = p.Classify(raw)
	if err == nil {
		t.Fatal("the pipeline admitted a document meant to be refused")
	}
	return err.Error()
}

func classified(id, dupKind string) map[string]any {
	doc := map[string]any{"id": id, "source_name": "alpha", "classification_status": "classified",
		"processing_strategy": "standard", "is_processable": true}
	if id == "d" { // a video page, classified from its metadata
		doc["processing_strategy"] = "metadata_only"
	}
	if dupKind != "" {
		doc["duplicate_of"] = map[string]any{"index": "alpha_raw_content", "id": "orig", "kind": dupKind}
	}
	return doc
}

// Per source: documents classified, raw documents by status, refusals at
// the door by field, duplicates by kind, published, dead letters and their
// rate, and the oldest pending document's age; an older classified index
// without duplicate_of, and a source with nothing classified, are
// tolerated.
func TestSourceStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	alpha, beta, gamma := b.prefix+"alpha", b.prefix+"beta", b.prefix+"gamma"

	// alpha: 2 pending (the older crawled 90 minutes ago), 4 classified,
	// 3 failed; its classified index holds the 4, one a URL duplicate and
	// one a content duplicate.
	var docs []contentindex.RawDocument
	for i, st := range []string{"pending", "pending", "classified", "classified", "classified", "classified", "failed", "failed", "failed"} {
		d := rawtest.Doc(alpha, string(rune('a'+i)), b.now.Add(-time.Duration(10+i)*time.Minute))
		d.ClassificationStatus = st
		docs = append(docs, d)
	}
	docs[1].CrawledAt = b.now.Add(-90 * time.Minute)
	rawtest.Write(t, b.es, contentindex.RawIndex(alpha), docs...)
	if err := contentindex.CreateIndex(ctx, b.es, contentindex.ClassifiedIndex(alpha)); err != nil {
		t.Fatal(err)
	}
	rawtest.WriteJSON(t, b.es, contentindex.ClassifiedIndex(alpha),
		classified("c", ""), classified("d", ""), classified("e", "url"), classified("f", "content"))

	// beta: nothing classified, one pending; gamma: a classified index
	// written before duplicate_of existed.
	rawtest.Write(t, b.es, contentindex.RawIndex(beta), rawtest.Doc(beta, "p", b.now.Add(-time.Hour)))
	res, err := b.es.Indices.Create(contentindex.ClassifiedIndex(gamma), b.es.Indices.Create.WithBody(
		strings.NewReader(`{"mappings":{"dynamic":"strict","properties":{"id":{"type":"keyword"}}}}`)))
	if err := esclient.CheckResponse("create old classified index", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	rawtest.WriteJSON(t, b.es, contentindex.ClassifiedIndex(gamma), map[string]any{"id": "g1"}, map[string]any{"id": "g2"})

	// alpha's failed documents: two refused at the door (url, raw_text),
	// one retried twice after a panic (one document, three attempts).
	failures := []domain.DeadLetterEntry{
		{ContentID: "g", SourceName: alpha, IndexName: contentindex.RawIndex(alpha), ErrorCode: domain.ErrorCodeValidation,
			ErrorMessage: refusal(t, func(d *contentindex.RawDocument) { d.URL = "" })},
		{ContentID: "h", SourceName: alpha, IndexName: contentindex.RawIndex(alpha), ErrorCode: domain.ErrorCodeValidation,
			ErrorMessage: refusal(t, func(d *contentindex.RawDocument) { d.RawText, d.Title = "", "" })},
	}
	for range 3 {
		failures = append(failures, domain.DeadLetterEntry{ContentID: "i", SourceName: alpha, IndexName: contentindex.RawIndex(alpha),
			ErrorCode: domain.ErrorCodeRulePanic, ErrorMessage: "classification panicked"})
		if _, err := b.dlq.EnqueueBatch(ctx, failures); err != nil {
			t.Fatal(err)
		}
		failures = failures[:0]
	}
	// A VALIDATION_ERROR that is not the door's (a value the classified
	// mapping refused) is a dead letter, not a refusal at the door.
	if _, err := b.dlq.EnqueueBatch(ctx, []domain.DeadLetterEntry{{ContentID: "p", SourceName: beta, IndexName: contentindex.RawIndex(beta),
		ErrorCode: domain.ErrorCodeValidation, ErrorMessage: "mapper_parsing_exception: failed to parse field [title]"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`INSERT INTO published_outcomes (index_name, content_id, version, outcome) VALUES
		($1, 'c', 1, '{}'), ($1, 'd', 2, '{}'), ($1, 'f', 1, '{}')`, contentindex.RawIndex(alpha)); err != nil {
		t.Fatal(err)
	}

	// One of alpha's pending documents is being classified: a live claim
	// in the lease table (the raw document stays pending); an expired and
	// a finished claim are not processing.
	if _, err := b.db.Exec(`INSERT INTO raw_claims (raw_index, doc_id, claimed_by, lease_until, seq_no, primary_term, done) VALUES
		($1, 'a', 'r', now() + interval '1 minute', 0, 1, FALSE), ($1, 'x', 'r', now() - interval '1 minute', 0, 1, FALSE),
		($1, 'y', 'r', now() + interval '1 minute', 0, 1, TRUE)`, contentindex.RawIndex(alpha)); err != nil {
		t.Fatal(err)
	}

	report, err := b.reader.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if report.Partial || !report.GeneratedAt.Equal(b.now) {
		t.Errorf("report partial=%t generated_at=%s, want complete at %s", report.Partial, report.GeneratedAt, b.now)
	}
	got := map[string]sourcestats.Source{}
	for _, s := range report.Sources {
		got[s.Source] = s
	}
	if len(got) != 3 {
		t.Fatalf("sources = %+v, want alpha, beta and gamma", report.Sources)
	}

	a := got[alpha]
	if a.RawIndex != contentindex.RawIndex(alpha) || a.Processed != 4 {
		t.Errorf("alpha: raw index %q, processed %d; want its raw index and 4", a.RawIndex, a.Processed)
	}
	if a.ByStatus["pending"] != 1 || a.ByStatus["processing"] != 1 || a.ByStatus["classified"] != 4 || a.ByStatus["failed"] != 3 {
		t.Errorf("alpha by status = %v", a.ByStatus)
	}
	if a.Rejected.Total != 2 || a.Rejected.ByField["url"] != 1 || a.Rejected.ByField["raw_text"] != 1 {
		t.Errorf("alpha refused at the door = %+v, want url 1 and raw_text 1", a.Rejected)
	}
	if a.ByStrategy["standard"] != 3 || a.ByStrategy["metadata_only"] != 1 || a.ByStrategy["refuse"] != 2 || len(a.ByStrategy) != 3 {
		t.Errorf("alpha by strategy = %v, want standard 3, metadata_only 1, refuse 2", a.ByStrategy)
	}
	if a.Duplicates["url"] != 1 || a.Duplicates["content"] != 1 || len(a.Duplicates) != 2 {
		t.Errorf("alpha duplicates = %v, want url 1 and content 1", a.Duplicates)
	}
	if a.Published != 3 {
		t.Errorf("alpha published = %d, want 3 (documents, not versions)", a.Published)
	}
	if a.DeadLetters != 3 || a.DLQRate == nil || *a.DLQRate != 0.75 {
		t.Errorf("alpha dead letters = %d, rate %v; want 3 documents (not 5 attempts) and 0.75", a.DeadLetters, a.DLQRate)
	}
	if a.OldestPendingCrawledAt == nil || !a.OldestPendingCrawledAt.Equal(b.now.Add(-90*time.Minute)) ||
		a.OldestPendingAgeSeconds == nil || *a.OldestPendingAgeSeconds != 5400 {
		t.Errorf("alpha oldest pending = %v, age %v; want 90 minutes old", a.OldestPendingCrawledAt, a.OldestPendingAgeSeconds)
	}

	be := got[beta]
	if be.Processed != 0 || be.DLQRate != nil || be.DeadLetters != 1 || be.Rejected.Total != 0 || be.ByStatus["pending"] != 1 {
		t.Errorf("beta = %+v, want nothing processed, no rate, one dead letter that is not a door refusal", be)
	}
	if be.OldestPendingAgeSeconds == nil || *be.OldestPendingAgeSeconds != 3600 {
		t.Errorf("beta oldest pending age = %v, want 3600", be.OldestPendingAgeSeconds)
	}
	g := got[gamma]
	if g.Processed != 2 || len(g.Duplicates) != 0 || g.OldestPendingAgeSeconds != nil || g.DLQRate == nil || *g.DLQRate != 0 {
		t.Errorf("gamma = %+v, want 2 processed, no duplicates, nothing pending, rate 0", g)
	}
}

func TestNewNeedsItsStores(t *testing.T) {
	t.Parallel()
	if _, err := sourcestats.New(sourcestats.Config{}); err == nil || !strings.Contains(err.Error(), "ES is required") ||
		!strings.Contains(err.Error(), "DB is required") {
		t.Fatalf("New with nothing = %v, want both stores named", err)
	}
}

// The Sources page polls GET /sources/stats: concurrent callers share one
// computation (before, each scanned Elasticsearch and published_outcomes
// on its own), and a report is served until it is CacheFor old.
func TestStatsSharedAndCached(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	db, _ := dbtest.Migrated(t)
	clk := clock.NewManual(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	reader, err := sourcestats.New(sourcestats.Config{ES: es, DB: db, RawPattern: prefix + "*" + contentindex.RawSuffix,
		Clock: clk.Clock(), CacheFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	alpha := prefix + "alpha"
	rawtest.Write(t, es, contentindex.RawIndex(alpha), rawtest.Doc(alpha, "a", clk.Now()))
	ctx := context.Background()
	const callers = 8
	reports := make(chan *sourcestats.Report, callers)
	errs := make(chan error, callers)
	for range callers {
		go func() {
			rep, err := reader.Stats(ctx)
			reports <- rep
			errs <- err
		}()
	}
	var first *sourcestats.Report
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		rep := <-reports
		if first == nil {
			first = rep
		}
		if rep != first {
			t.Fatal("concurrent callers got reports of different computations")
		}
	}
	rawtest.Write(t, es, contentindex.RawIndex(alpha), rawtest.Doc(alpha, "b", clk.Now()))
	if rep, err := reader.Stats(ctx); err != nil || rep != first {
		t.Fatalf("within CacheFor: %p, %v; want the cached report %p", rep, err, first)
	}
	clk.Advance(time.Minute)
	rep, err := reader.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep == first || len(rep.Sources) != 1 || rep.Sources[0].ByStatus["pending"] != 2 {
		t.Fatalf("after CacheFor: %+v, want a new report with 2 pending", rep)
	}
}
