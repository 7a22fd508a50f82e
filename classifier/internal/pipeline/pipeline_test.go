package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/contentindex"
)

func TestDetectContentType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		og, url              string
		words                int
		hasTitle, hasDate    bool
		wantType, wantMethod string
	}{
		{"og article", "article", "https://x.test/news/1", 50, true, false, TypeArticle, "og_type"},
		{"og video", "video.other", "https://x.test/v/1", 10, true, false, TypeVideo, "og_type"},
		{"og image", "image", "https://x.test/p/1", 10, true, false, TypeImage, "og_type"},
		{"og article on a category page", "article", "https://x.test/category/local", 500, true, true, TypePage, "url_pattern"},
		{"tag page", "", "https://x.test/tag/police", 500, true, true, TypePage, "url_pattern"},
		{"login page", "website", "https://x.test/login?next=/", 30, true, false, TypePage, "url_pattern"},
		{"pagination path", "", "https://x.test/news/page/3", 500, true, true, TypePage, "url_pattern"},
		{"pagination query", "", "https://x.test/news?page=2", 500, true, true, TypePage, "url_pattern"},
		{"long dated text", "", "https://x.test/2026/story", 450, true, true, TypeArticle, "heuristic"},
		{"long undated text", "", "https://x.test/story", 350, true, false, TypeArticle, "heuristic"},
		{"medium text", "", "https://x.test/about", 80, true, false, TypePage, "heuristic"},
		{"short text", "", "https://x.test/x", 5, false, false, TypeOther, "heuristic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := detectContentType(tt.og, tt.url, tt.words, tt.hasTitle, tt.hasDate)
			if got.Type != tt.wantType || got.Method != tt.wantMethod || got.Confidence <= 0 || got.Confidence > 1 {
				t.Errorf("got %+v, want %s by %s", got, tt.wantType, tt.wantMethod)
			}
		})
	}
}

func TestScoreQuality(t *testing.T) {
	t.Parallel()
	// Varied news prose: about 18 words a sentence, many distinct words.
	var b strings.Builder
	for i := range 45 {
		fmt.Fprintf(&b, "Councillor number %d argued on Tuesday that the %s budget for district %d should fund transit, housing and parks. ",
			i, []string{"revised", "proposed", "annual", "capital", "operating"}[i%5], i*7)
	}
	prose := b.String()
	tests := []struct {
		name        string
		words       int
		title, desc string
		date        bool
		text        string
		min, max    int
	}{
		{"complete long article", 800, "Budget", "The council met", true, prose, 75, 100},
		{"no metadata", 800, "", "", false, prose, 50, 80},
		{"short stub", 5, "x", "", false, "Click here now", 0, 25},
		{"empty", 0, "", "", false, "", 0, 0},
		{"one endless sentence", 800, "Budget", "d", true, strings.Repeat("word ", 800), 40, 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			score, f := scoreQuality(tt.words, tt.title, tt.desc, tt.date, tt.text)
			if score < tt.min || score > tt.max {
				t.Errorf("score %d (factors %+v), want %d..%d", score, f, tt.min, tt.max)
			}
			for _, v := range []float64{f.WordCount, f.Metadata, f.Richness, f.Readability} {
				if v < 0 || v > 1 {
					t.Errorf("factor out of 0..1: %+v", f)
				}
			}
		})
	}
	// Readability is computed from the text, not a constant.
	_, good := scoreQuality(800, "t", "d", true, prose)
	_, bad := scoreQuality(800, "t", "d", true, strings.Repeat("incomprehensibilities ", 800))
	if good.Readability <= bad.Readability {
		t.Errorf("readability of news prose %.2f should beat one run-on of long words %.2f", good.Readability, bad.Readability)
	}
}

func newPipeline(t *testing.T) *Pipeline {
	t.Helper()
	engine, err := rules.NewEngine(rules.MatcherAhoCorasick, []rules.Rule{
		{ID: 1, Topic: "violent_crime", Keywords: []string{"shooting", "murder", "gun"}, Priority: 100, Enabled: true},
		{ID: 2, Topic: "property_crime", Keywords: []string{"burglary", "theft"}, Priority: 90, Enabled: true},
		{ID: 3, Topic: "politics", Keywords: []string{"council", "mayor"}, Priority: 10, Enabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The rules decide alone here: these tests are about routing what the
	// rules find (decide_test.go covers the model).
	c, err := New(Config{Topics: engine, Model: rulesAlone, Reputation: func(s string) float64 {
		if s == "trusted" {
			return 0.9
		}
		return 0.5
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func rulesAlone(string, string) (*topicmodel.Scorer, *topicmodel.Scorer) { return nil, nil }

func raw(mod func(*contentindex.RawDocument)) *domain.RawContent {
	d := contentindex.RawDocument{ID: "1", URL: "https://x.test/news/1", SourceName: "trusted", Title: "Shooting downtown",
		RawText: "Police said the shooting and a burglary happened after the council met.", OGType: "article",
		PublishedDate: "2026-11-25T10:00:00Z", CrawledAt: time.Now()}
	if mod != nil {
		mod(&d)
	}
	return &domain.RawContent{RawDocument: d, Index: "trusted_raw_content"}
}

func TestClassifyRoutesCrimeAndKeepsTopicOrder(t *testing.T) {
	t.Parallel()
	c := newPipeline(t)
	doc, err := c.Classify(raw(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsCrimeRelated || doc.CrimeSubcategory == nil || *doc.CrimeSubcategory != "violent_crime" {
		t.Errorf("crime = %t %v, want violent_crime", doc.IsCrimeRelated, doc.CrimeSubcategory)
	}
	if strings.Join(doc.Topics, ",") != "violent_crime,property_crime,politics" {
		t.Errorf("topics = %v, want priority order", doc.Topics)
	}
	if doc.SourceReputation != 0.9 || doc.PublishedDate == nil || doc.ContentType != TypeArticle {
		t.Errorf("doc = %+v", doc)
	}
	// "gun" must not match inside "begun".
	doc, err = c.Classify(raw(func(d *contentindex.RawDocument) {
		d.Title, d.RawText = "Work has begun", "Construction has begun on the new library."
	}))
	if err != nil || doc.IsCrimeRelated || len(doc.Topics) != 0 {
		t.Errorf("begun matched a crime keyword: %+v %v", doc.Topics, err)
	}
}

func TestClassifyBadInput(t *testing.T) {
	t.Parallel()
	c := newPipeline(t)
	unprocessable := []struct {
		name string
		mod  func(*contentindex.RawDocument)
	}{
		{"no url", func(d *contentindex.RawDocument) { d.URL = "" }},
		{"ftp url", func(d *contentindex.RawDocument) { d.URL = "ftp://x.test/a" }},
		{"relative url", func(d *contentindex.RawDocument) { d.URL = "/news/1" }},
		{"javascript url", func(d *contentindex.RawDocument) { d.URL = "javascript:alert(1)" }},
		{"empty text and title", func(d *contentindex.RawDocument) { d.Title, d.RawText = " ", "\n" }},
	}
	for _, tt := range unprocessable {
		if _, err := c.Classify(raw(tt.mod)); !errors.Is(err, ErrUnprocessable) {
			t.Errorf("%s: err = %v, want ErrUnprocessable", tt.name, err)
		}
	}
	malformed := raw(nil)
	malformed.DecodeError = "json: cannot unmarshal number into word_count"
	if _, err := c.Classify(malformed); !errors.Is(err, ErrUnprocessable) || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("decode error: err = %v", err)
	}

	tolerated := []struct {
		name string
		mod  func(*contentindex.RawDocument)
	}{
		{"no title", func(d *contentindex.RawDocument) { d.Title = "" }},
		{"no body", func(d *contentindex.RawDocument) { d.RawText = "" }},
		{"unparsable date", func(d *contentindex.RawDocument) { d.PublishedDate = "yesterday-ish" }},
		{"invalid utf-8", func(d *contentindex.RawDocument) { d.RawText = "shooting \xff\xfe downtown"; d.Title = "bad \xc3" }},
		{"megabytes of body", func(d *contentindex.RawDocument) { d.RawText = strings.Repeat("murder ", 600_000) }},
	}
	for _, tt := range tolerated {
		doc, err := c.Classify(raw(tt.mod))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !utf8Valid(doc.Title) || !utf8Valid(doc.RawText) {
			t.Errorf("%s: output is not valid UTF-8", tt.name)
		}
	}
	doc, _ := c.Classify(raw(func(d *contentindex.RawDocument) { d.PublishedDate = "yesterday-ish" }))
	if doc.PublishedDate != nil {
		t.Errorf("unparsable date became %v, want nil", doc.PublishedDate)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }

func TestClassifyAdmission(t *testing.T) {
	t.Parallel()
	c := newPipeline(t)
	tests := []struct {
		name string
		mod  func(*contentindex.RawDocument)
		// wantField is the field the refusal names; "" means classified.
		wantField, wantMsg string
	}{
		{name: "NUL in raw_text", mod: func(d *contentindex.RawDocument) { d.RawText = "Police said the\x00 shooting\x00 happened." }},
		{name: "invalid UTF-8 in title", mod: func(d *contentindex.RawDocument) { d.Title = "Shooting \xff\xfe downtown" }},
		{name: "NUL in id", mod: func(d *contentindex.RawDocument) { d.ID = "1\x00" }, wantField: "id", wantMsg: "id: NUL byte"},
		{name: "256-character id", mod: func(d *contentindex.RawDocument) { d.ID = strings.Repeat("i", 256) },
			wantField: "id", wantMsg: "id: 256 characters, over the 255-character limit"},
		{name: "255-character id", mod: func(d *contentindex.RawDocument) { d.ID = strings.Repeat("i", 255) }},
		{name: "255 multibyte characters of source, not its index's", mod: func(d *contentindex.RawDocument) { d.SourceName = strings.Repeat("ü", 255) },
			wantField: "source_name", wantMsg: `is not the source of its raw index "trusted_raw_content"`},
		{name: "300-character source", mod: func(d *contentindex.RawDocument) { d.SourceName = strings.Repeat("s", 300) },
			wantField: "source_name", wantMsg: "source_name: 300 characters, over the 255-character limit"},
		{name: "NUL in url", mod: func(d *contentindex.RawDocument) { d.URL += "\x00" }, wantField: "url", wantMsg: "url: NUL byte"},
		{name: "10 MB raw_text", mod: func(d *contentindex.RawDocument) { d.RawText = strings.Repeat("shooting ", 10_000_000/9) },
			wantField: "document", wantMsg: "over the 8388608-byte (8 MiB) limit"},
		{name: "5.6 MB raw_text", mod: func(d *contentindex.RawDocument) { d.RawText = strings.Repeat("shooting ", 5_600_000/9) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := c.Classify(raw(tt.mod))
			if tt.wantField != "" {
				var rej *admission.RejectionError
				if !errors.Is(err, ErrUnprocessable) || !errors.As(err, &rej) || rej.Field != tt.wantField ||
					!strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("err = %v, want ErrUnprocessable naming %s: %q", err, tt.wantField, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertStorable(t, doc)
			if !doc.IsCrimeRelated || doc.CrimeSubcategory == nil || *doc.CrimeSubcategory != "violent_crime" {
				t.Errorf("not classified as violent_crime: %v", doc.Topics)
			}
		})
	}

	doc, err := c.Classify(raw(func(d *contentindex.RawDocument) {
		d.Title, d.RawText, d.MetaDescription = "Shoot\x00ing \xc3", "A\x00 shooting \xff.", "de\x00sc"
	}))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Shooting \uFFFD" || doc.RawText != "A shooting \uFFFD." || doc.MetaDescription != "desc" {
		t.Errorf("normalized to title %q, raw_text %q, meta_description %q", doc.Title, doc.RawText, doc.MetaDescription)
	}
}

// assertStorable checks every string a classified document takes to
// Postgres or Elasticsearch.
func assertStorable(t *testing.T, d *domain.ClassifiedContent) {
	t.Helper()
	strs := []string{d.ID, d.URL, d.SourceName, d.Title, d.RawText, d.RawHTML, d.OGType, d.MetaDescription,
		d.ClassificationStatus, d.ContentType, d.ContentTypeMethod, d.ClassifierVersion, d.Index, d.ClaimID}
	strs = append(strs, d.Topics...)
	for i, s := range strs {
		if !utf8Valid(s) || strings.ContainsRune(s, 0) {
			t.Errorf("string %d of the classified document is not storable: %.40q", i, s)
		}
	}
	if _, err := json.Marshal(d); err != nil {
		t.Errorf("classified document does not encode: %v", err)
	}
}

func TestClassifyLimits(t *testing.T) {
	t.Parallel()
	engine, err := rules.NewEngine(rules.MatcherAhoCorasick, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Topics: engine, Limits: admission.Limits{MaxIDChars: 300}}); err == nil ||
		!strings.Contains(err.Error(), "MaxIDChars") {
		t.Errorf("New accepted an id limit wider than its column: %v", err)
	}
	c, err := New(Config{Topics: engine, Limits: admission.Limits{MaxDocumentBytes: 100, MaxURLBytes: 30}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Classify(raw(func(d *contentindex.RawDocument) { d.RawText = strings.Repeat("x", 101) })); !errors.Is(err, ErrUnprocessable) ||
		!strings.Contains(err.Error(), "over the 100-byte limit") {
		t.Errorf("configured document limit not applied: %v", err)
	}
	if _, err := c.Classify(raw(func(d *contentindex.RawDocument) { d.URL = "https://x.test/" + strings.Repeat("a", 16) })); !errors.Is(err, ErrUnprocessable) ||
		!strings.Contains(err.Error(), "url: 31 bytes, over the 30-byte limit") {
		t.Errorf("configured url limit not applied: %v", err)
	}
	if _, err := c.Classify(raw(func(d *contentindex.RawDocument) { d.Title, d.RawText = "short", "fits" })); err != nil {
		t.Errorf("a small document was refused: %v", err)
	}
}

// A published date whose UTC year leaves 1..9999 cannot be encoded to JSON
// (it would fail the whole bulk request): it is treated as missing.
func TestClassifyDateOutOfRange(t *testing.T) {
	t.Parallel()
	c := newPipeline(t)
	for _, date := range []string{"0000-01-01T00:00:00+01:00", "9999-12-31T23:00:00-14:00", "0000-01-01"} {
		doc, err := c.Classify(raw(func(d *contentindex.RawDocument) { d.PublishedDate = date }))
		if err != nil {
			t.Fatal(err)
		}
		if doc.PublishedDate != nil {
			t.Errorf("%s became %v, want nil", date, doc.PublishedDate)
		}
		assertStorable(t, doc)
	}
	doc, _ := c.Classify(raw(func(d *contentindex.RawDocument) { d.PublishedDate = "0001-01-01T00:00:00Z" }))
	if doc.PublishedDate == nil {
		t.Error("year 1 was dropped")
	}
}

// A document a reprocess task set back to pending names that task on its
// classification, for the committer to count whether its topics changed.
func TestClassifyCarriesTheReprocessTask(t *testing.T) {
	t.Parallel()
	c := newPipeline(t)
	doc, err := c.Classify(raw(func(d *contentindex.RawDocument) { d.ReprocessTask = "6f1c2d3e-0000-4000-8000-000000000002" }))
	if err != nil {
		t.Fatal(err)
	}
	if doc.ReprocessTask != "6f1c2d3e-0000-4000-8000-000000000002" {
		t.Errorf("reprocess task = %q, want the raw document's", doc.ReprocessTask)
	}
}
