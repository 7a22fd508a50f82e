package processor

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/dedup"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/republish"
	"github.com/north-cloud/infrastructure/postgres/postgrestest"
)

// Two attempts at one document with the same outcome (a replica killed
// after its outbox row and before its record, and the next attempt) write
// the same version, so the outbox publishes the document once: the version
// reserved by the first attempt. An attempt with another outcome (rules
// edited between the attempts) takes the next version, since the first
// one's row may be out. Once recorded, the document is not published again
// for the same outcome.
func TestHygieneAttemptsAtOneDocumentShareItsVersion(t *testing.T) {
	t.Parallel()
	db, _ := dbtest.Migrated(t)
	h := &Hygiene{Duplicates: dedup.New(db, dedup.Config{}), Outcomes: republish.New(db)}
	ctx := context.Background()
	doc := func(contentType string) *domain.ClassifiedContent {
		d := &domain.ClassifiedContent{ContentType: contentType}
		d.ID, d.RawIndex, d.SourceName, d.URL = "1", "s_raw_content", "s", "https://s.example/1"
		return d
	}
	first := doc("article")
	if err := h.decide(ctx, []*domain.ClassifiedContent{first}); err != nil {
		t.Fatal(err)
	}
	if !first.Publish || first.Version != 1 {
		t.Fatalf("first attempt: publish %t version %d", first.Publish, first.Version)
	}
	same := doc("article")
	if err := h.decide(ctx, []*domain.ClassifiedContent{same}); err != nil {
		t.Fatal(err)
	}
	if !same.Publish || same.Version != 1 {
		t.Fatalf("retry with the same outcome: publish %t version %d, want version 1", same.Publish, same.Version)
	}
	other := doc("page")
	if err := h.decide(ctx, []*domain.ClassifiedContent{other}); err != nil {
		t.Fatal(err)
	}
	if !other.Publish || other.Version != 2 {
		t.Fatalf("another attempt with another outcome: publish %t version %d, want version 2", other.Publish, other.Version)
	}
	if err := h.record(ctx, []*domain.ClassifiedContent{other}); err != nil {
		t.Fatal(err)
	}
	again := doc("page")
	if err := h.decide(ctx, []*domain.ClassifiedContent{again}); err != nil {
		t.Fatal(err)
	}
	if again.Publish || again.Version != 2 {
		t.Fatalf("after record: publish %t version %d, want version 2 not published", again.Publish, again.Version)
	}
}

// The duplicate cleanup loop prunes published_outcomes with the documents'
// duplicate records: past the longer window, a document's published
// outcome is forgotten with its URL and text (its version kept); a newer
// one stays.
func TestHygieneCleanupPrunesPublishedOutcomes(t *testing.T) {
	t.Parallel()
	db, _ := dbtest.Migrated(t)
	h := &Hygiene{Duplicates: dedup.New(db, dedup.Config{URLWindow: 48 * time.Hour, ContentWindow: 24 * time.Hour}), Outcomes: republish.New(db)}
	ctx := context.Background()
	for _, id := range []string{"old", "recent"} {
		d := &domain.ClassifiedContent{ContentType: "article"}
		d.ID, d.RawIndex, d.SourceName, d.URL = id, "s_raw_content", "s", "https://s.example/"+id
		if err := h.decide(ctx, []*domain.ClassifiedContent{d}); err != nil {
			t.Fatal(err)
		}
		if err := h.record(ctx, []*domain.ClassifiedContent{d}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`UPDATE published_outcomes SET published_at = NOW() - INTERVAL '49 hours' WHERE content_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE published_outcomes SET published_at = NOW() - INTERVAL '47 hours' WHERE content_id = 'recent'`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Cleanup(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	ids := postgrestest.Strings(t, db, `SELECT content_id FROM published_outcomes WHERE outcome IS NOT NULL`)
	if len(ids) != 1 || ids[0] != "recent" {
		t.Fatalf("published outcomes after cleanup: %v, want [recent]", ids)
	}
}
