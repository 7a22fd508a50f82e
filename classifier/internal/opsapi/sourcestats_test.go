package opsapi

import (
	"database/sql"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/sourcestats"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"
)

// GET /sources/stats answers every source's figures (checked against the
// OpenAPI document); it is not taken for a source named "stats", and
// answers 503 on a classifier that serves no statistics.
func TestSourceStatsRoute(t *testing.T) {
	t.Parallel()
	es, prefix := testenv.Elasticsearch(t)
	b := setupWith(t, func(db *sql.DB, d *Deps) {
		r, err := sourcestats.New(sourcestats.Config{ES: es, DB: db, RawPattern: prefix + "*_raw_content"})
		if err != nil {
			t.Fatal(err)
		}
		d.SourceStats = r
	})
	source := prefix + "news"
	pending := rawtest.Doc(source, "p1", time.Now().Add(-time.Hour))
	done := rawtest.Doc(source, "c1", time.Now().Add(-2*time.Hour))
	done.ClassificationStatus = contentindex.StatusClassified
	rawtest.Write(t, es, contentindex.RawIndex(source), pending, done)

	var report struct {
		Sources []sourcestats.Source `json:"sources"`
	}
	if code := b.do(t, "GET", "/api/v1/sources/stats", nil, &report); code != 200 {
		t.Fatalf("GET /sources/stats = %d", code)
	}
	if len(report.Sources) != 1 || report.Sources[0].Source != source || report.Sources[0].ByStatus["pending"] != 1 ||
		report.Sources[0].OldestPendingAgeSeconds == nil || *report.Sources[0].OldestPendingAgeSeconds < 3500 {
		t.Fatalf("sources = %+v, want %s with one pending document about an hour old", report.Sources, source)
	}

	plain := setup(t)
	if code, ec := plain.doRaw(t, "GET", "/api/v1/sources/stats", ""); code != 503 || ec != "unavailable" {
		t.Errorf("GET /sources/stats without a reader = %d %s, want 503 unavailable", code, ec)
	}
}
