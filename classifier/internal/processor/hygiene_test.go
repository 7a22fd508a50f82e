package processor

import (
	"context"
	"testing"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/dedup"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/republish"
)

// The republish race, as the committer meets it: an attempt decides a
// document (version 1), writes its outbox row and dies before record; the
// retry, with rules edited meanwhile, has another outcome and must take
// version 2, or its outbox row would be absorbed by the first one's key
// and subscribers left with the stale outcome. A retry with the same
// outcome keeps version 1 (its row is absorbed, as it should be).
func TestHygieneRetryWithAnotherOutcomeTakesTheNextVersion(t *testing.T) {
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
		t.Fatalf("retry with another outcome: publish %t version %d, want version 2", other.Publish, other.Version)
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
