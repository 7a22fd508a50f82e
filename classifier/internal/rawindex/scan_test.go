package rawindex_test

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// Every matching document of every index is read once, with its index and
// version, in pages; a document written after the scan began is not (the
// point in time is a snapshot); a pattern that matches nothing reads
// nothing.
func TestScanReadsASnapshotOnce(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	a, b := contentindex.RawIndex(prefix+"a"), contentindex.RawIndex(prefix+"b")
	now := time.Now()
	rawtest.Write(t, es, a, rawtest.Doc("a", "1", now), rawtest.Doc("a", "2", now), rawtest.Doc("a", "3", now))
	done := rawtest.Doc("b", "9", now)
	done.ClassificationStatus = contentindex.StatusClassified
	rawtest.Write(t, es, b, rawtest.Doc("b", "1", now), rawtest.Doc("b", "2", now), done)

	store, err := rawindex.New(rawindex.Config{ES: es})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[domain.DocKey]int{}
	pages := 0
	err = store.Scan(context.Background(), rawindex.ScanQuery{
		Indices:  prefix + "*" + contentindex.RawSuffix,
		Statuses: []string{contentindex.StatusPending},
		Fields:   []string{"source_name"},
		PageSize: 2,
	}, func(_ context.Context, docs []*domain.RawContent) (bool, error) {
		if pages == 0 {
			rawtest.Write(t, es, a, rawtest.Doc("a", "late", now))
		}
		pages++
		for _, d := range docs {
			seen[domain.DocKey{Index: d.Index, ID: d.ID}]++
			if d.SeqNo < 0 || d.PrimaryTerm < 1 || d.SourceName == "" {
				t.Errorf("%s/%s read without its version or source: %+v", d.Index, d.ID, d)
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 5 || pages != 3 {
		t.Fatalf("read %d documents in %d pages: %v; want the 5 pending ones in 3 pages", len(seen), pages, seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%v read %d times", k, n)
		}
	}
	if seen[domain.DocKey{Index: a, ID: "late"}] != 0 || seen[domain.DocKey{Index: b, ID: "9"}] != 0 {
		t.Errorf("read a document outside the snapshot or the filter: %v", seen)
	}

	calls := 0
	if err := store.Scan(context.Background(), rawindex.ScanQuery{Indices: prefix + "nothing*"},
		func(context.Context, []*domain.RawContent) (bool, error) { calls++; return true, nil }); err != nil || calls != 0 {
		t.Fatalf("scan of no index: %d pages, %v; want none and no error", calls, err)
	}
}
