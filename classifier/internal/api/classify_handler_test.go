package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/north-cloud/classifier/internal/api"
)

func TestClassifyEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var before int
	if err := b.db.QueryRow(`SELECT count(*) FROM classification_history`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"url":                "https://news.example.com/2026/11/25/downtown-shooting",
		"source_name":        "example_news",
		"title":              "Man shot dead in downtown shooting",
		"raw_text":           "Police say a gunman opened fire outside a bar. Witnesses heard gunfire and a man was fatally shot. The homicide unit is investigating and asks witnesses to come forward.",
		"og_type":            "article",
		"published_date":     "2026-11-25T08:00:00Z",
		"some_crawler_field": map[string]any{"ignored": true},
	}
	res := b.do(t, "POST", "/classify", doc)
	if res.status != http.StatusOK {
		t.Fatalf("%d %s", res.status, res.body)
	}
	var out api.ClassifyResponse
	res.decode(t, &out)
	d := out.Document
	if d == nil || d.ID != api.DryRunID || d.URL != doc["url"] || d.ClassificationStatus != "classified" {
		t.Fatalf("document = %+v", d)
	}
	if !d.IsCrimeRelated || d.CrimeSubcategory == nil || *d.CrimeSubcategory != "violent_crime" || !slices.Contains(d.Topics, "violent_crime") {
		t.Errorf("crime classification: related=%v sub=%v topics=%v", d.IsCrimeRelated, d.CrimeSubcategory, d.Topics)
	}
	if d.ContentType == "" || d.QualityScore <= 0 || d.ClassifierVersion == "" {
		t.Errorf("pipeline fields missing: %+v", d)
	}
	if out.RulesVersion == nil {
		t.Error("rules_version missing")
	}
	// The explanation says why: the decision equals the document's, the
	// model's view and the words that pushed the crime topic are there.
	x := out.Explanation
	if x == nil || x.Decision.Primary != d.PrimaryTopic || x.Decision.Crime != d.IsCrimeRelated || x.Model == nil || len(x.Rules) == 0 {
		t.Fatalf("explanation %+v for document topics %v (primary %q)", x, d.Topics, d.PrimaryTopic)
	}
	pushed := false
	for _, c := range x.Contributions {
		if c.Logit > 0 && (c.Term == "gunman" || c.Term == "shot dead" || c.Term == "homicid") {
			pushed = true
		}
	}
	if !pushed {
		t.Errorf("no crime word among the contributions: %+v", x.Contributions)
	}
	var after int
	if err := b.db.QueryRow(`SELECT count(*) FROM classification_history`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("classify wrote %d history rows", after-before)
	}

	for _, tt := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"no url", map[string]any{"title": "t", "raw_text": "text"}, http.StatusUnprocessableEntity, "unprocessable"},
		{"bad scheme", map[string]any{"url": "ftp://x/y", "raw_text": "text"}, http.StatusUnprocessableEntity, "unprocessable"},
		{"no text", map[string]any{"url": "https://x.example/a"}, http.StatusUnprocessableEntity, "unprocessable"},
		{"wrong type", map[string]any{"url": "https://x.example/a", "word_count": "many"}, http.StatusBadRequest, "invalid_json"},
		{"not JSON", "nope", http.StatusBadRequest, "invalid_json"},
		{"empty", nil, http.StatusBadRequest, "invalid_json"},
		{"null", "null", http.StatusBadRequest, "invalid_json"},
		{"trailing data", `{"url":"https://x.example/a","raw_text":"t"} {}`, http.StatusBadRequest, "invalid_json"},
		{"NUL in a field", `{"url":"https://x.example/a","raw_text":"a\u0000b"}`, http.StatusBadRequest, "invalid_text"},
	} {
		res := b.do(t, "POST", "/classify", tt.body)
		if res.status != tt.status || res.errorCode() != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, res.status, res.body, tt.status, tt.code)
		}
	}
}
