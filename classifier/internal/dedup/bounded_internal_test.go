package dedup

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/fingerprint"
)

// boilerplate is a text long enough for a sketch; copies of it share every
// sketch value and the exact hash.
var boilerplate = strings.Repeat("Officials said more details would be released later in the week. ", 12)

// boilerplateDocs returns n documents with the same text.
func boilerplateDocs(prefix string, n int) []Doc {
	fp := fingerprint.Of("Local news", boilerplate)
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{Key: domain.DocKey{Index: "s_raw_content", ID: fmt.Sprintf("%s-%06d", prefix, i)}, Source: "s", Fingerprint: fp}
	}
	return docs
}

// planRows sums, over the plan's nodes that read index (every loop), the
// rows they returned.
func planRows(node map[string]any, index string) float64 {
	var n float64
	if node["Index Name"] == index {
		n += node["Actual Rows"].(float64) * node["Actual Loops"].(float64)
	}
	if kids, ok := node["Plans"].([]any); ok {
		for _, k := range kids {
			n += planRows(k.(map[string]any), index)
		}
	}
	return n
}

// A text shared by thousands of stored documents costs a new copy of it no
// more than one shared by a few: the candidate lookup reads at most
// MaxCandidates entries per sketch value and for the exact hash, however
// many rows share them, even when the planner has no statistics. (Over the
// GIN index it read every one; with "value = v" and no statistics the
// planner chose a bitmap scan and a sort: 1.6 million postings here.)
func TestCandidateLookupIsBoundedForBoilerplate(t *testing.T) {
	db, _ := dbtest.Migrated(t)
	s := New(db, Config{})
	ctx := context.Background()
	const stored, batch = 20000, 10
	if err := s.record(ctx, boilerplateDocs("old", stored)); err != nil {
		t.Fatal(err)
	}
	// No ANALYZE: the planner has no statistics, as on a new database or
	// just after a flood of boilerplate.
	docs := boilerplateDocs("new", batch)

	var plan []map[string]any
	var raw []byte
	if err := db.QueryRowContext(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+candidatesQuery, s.candidateArgs(docs, s.cfg.MaxCandidates)...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		t.Fatal(err)
	}
	root := plan[0]["Plan"].(map[string]any)
	postings := planRows(root, "idx_content_sketch_postings_order")
	exact := planRows(root, "idx_content_fingerprints_exact")
	if postings == 0 || exact == 0 {
		t.Fatalf("the lookup read postings=%v exact=%v rows: not through the ordered indexes\n%s", postings, exact, raw)
	}
	t.Logf("%d copies among %d stored: %.0f postings and %.0f exact-hash entries read", batch, stored, postings, exact)
	limit := float64(batch * DefaultMaxCandidates)
	if postings > limit*fingerprint.SketchSize || exact > limit {
		t.Errorf("for %d copies among %d stored: read %.0f postings (bound %.0f) and %.0f exact-hash entries (bound %.0f)",
			batch, stored, postings, limit*fingerprint.SketchSize, exact, limit)
	}

	// The verdicts are what the unbounded lookup gave: each copy
	// duplicates the first stored one.
	got, err := s.Check(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	first := domain.DocKey{Index: "s_raw_content", ID: "old-000000"}
	for i, v := range got {
		if v.Kind != Content || v.Of != first {
			t.Errorf("copy %d: %+v, want a content duplicate of %v", i, v, first)
		}
	}
}

// The postings follow their fingerprint rows: a changed text moves them,
// an unchanged one leaves them, a cleanup removes them.
func TestPostingsFollowTheirFingerprints(t *testing.T) {
	db, _ := dbtest.Migrated(t)
	s := New(db, Config{})
	ctx := context.Background()
	count := func() (n int) {
		t.Helper()
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM content_sketch_postings`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	docs := boilerplateDocs("a", 2)
	if err := s.record(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if got, want := count(), 2*len(docs[0].Fingerprint.Sketch); got != want {
		t.Fatalf("postings after the first record: %d, want %d", got, want)
	}
	changed := docs[0]
	changed.Fingerprint = fingerprint.Of("Other", strings.Repeat("The council met on Tuesday to debate the transit budget again. ", 12))
	if err := s.record(ctx, []Doc{changed, docs[1]}); err != nil {
		t.Fatal(err)
	}
	var stale int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM content_sketch_postings WHERE content_id = $1 AND NOT (value = ANY($2::bigint[]))`,
		changed.Key.ID, pq.Array(changed.Fingerprint.Sketch)).Scan(&stale); err != nil {
		t.Fatal(err)
	}
	if stale != 0 || count() != 2*fingerprint.SketchSize {
		t.Fatalf("after a text change: %d stale postings, %d in all (want 0 and %d)", stale, count(), 2*fingerprint.SketchSize)
	}
	if _, err := db.ExecContext(ctx, `UPDATE content_fingerprints SET first_seen_at = NOW() - INTERVAL '4 days'`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Cleanup(ctx, 100); err != nil || n != 2 {
		t.Fatalf("cleanup: %d rows, %v; want 2", n, err)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d postings left after their fingerprints were cleaned up", n)
	}
}
