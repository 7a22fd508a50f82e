package loadgen

import (
	"strings"
	"testing"
)

func TestCrawlerIsDeterministicBySeed(t *testing.T) {
	t.Parallel()
	a, err := NewCrawler(7, CrawlerConfig{DuplicateRate: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewCrawler(7, CrawlerConfig{DuplicateRate: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		da, ka := a.Document("s", i)
		db, kb := b.Document("s", i)
		// CrawledAt follows the clock; everything else follows the seed.
		if da.ID != db.ID || da.RawText != db.RawText || da.RawHTML != db.RawHTML || ka != kb {
			t.Fatalf("document %d differs between two crawlers of one seed", i)
		}
	}
}

func TestCrawlerDocumentsHaveCrawlerShape(t *testing.T) {
	t.Parallel()
	const n = 2000
	c, err := NewCrawler(11, CrawlerConfig{DuplicateRate: DuplicateRateDefault})
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]bool{}
	texts := map[string]int{}
	urls := map[string]bool{}
	for i := range n {
		d, kind := c.Document("s", i)
		if kind == Original {
			if l := len(d.RawText); l < TextMinBytesDefault || l > TextMaxBytesDefault+400 {
				t.Fatalf("document %d: raw_text of %d bytes, want %d to %d", i, l, TextMinBytesDefault, TextMaxBytesDefault)
			}
		}
		if l := len(d.RawHTML); l < HTMLMinBytesDefault || l > HTMLMaxBytesDefault+len(d.RawText)+1024 {
			t.Fatalf("document %d: raw_html of %d bytes, want about %d to %d", i, l, HTMLMinBytesDefault, HTMLMaxBytesDefault)
		}
		if !strings.Contains(d.RawHTML, d.Title) {
			t.Fatalf("document %d: the page does not carry its title", i)
		}
		for _, w := range strings.Fields(d.RawText) {
			words[strings.ToLower(strings.Trim(w, ".,;"))] = true
		}
		texts[d.RawText]++
		if urls[d.URL] {
			t.Fatalf("document %d: URL %s written twice: copies are only the stated rate", i, d.URL)
		}
		urls[d.URL] = true
	}
	if len(words) < 5000 {
		t.Errorf("%d distinct words in %d documents, want thousands", len(words), n)
	}
	copies := c.Copies()
	total := copies[ExactCopy] + copies[NearCopy]
	// 3% of 2,000 is 60; a binomial's spread is about 8.
	if total < 30 || total > 90 || copies[ExactCopy] == 0 || copies[NearCopy] == 0 {
		t.Errorf("copies %v, want about 60 of both kinds", copies)
	}
	repeated := 0
	for _, k := range texts {
		repeated += k - 1
	}
	if repeated < copies[ExactCopy] {
		t.Errorf("%d texts repeat, want at least the %d exact copies", repeated, copies[ExactCopy])
	}
}

func TestCrawlerPagesOfOneSize(t *testing.T) {
	t.Parallel()
	c, err := NewCrawler(3, CrawlerConfig{HTMLMinBytes: 100 << 10, HTMLMaxBytes: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		d, _ := c.Document("s", i)
		if len(d.RawHTML) != 100<<10 {
			t.Fatalf("document %d: page of %d bytes, want %d", i, len(d.RawHTML), 100<<10)
		}
	}
}

func TestCrawlerConfigValidate(t *testing.T) {
	t.Parallel()
	for _, cfg := range []CrawlerConfig{
		{TextMinBytes: 9000, TextMaxBytes: 8000},
		{HTMLMinBytes: 5, HTMLMaxBytes: 4},
		{DuplicateRate: 0.9},
		{VocabularySize: 10},
	} {
		if _, err := NewCrawler(1, cfg); err == nil {
			t.Errorf("NewCrawler(%+v): no error", cfg)
		}
	}
}
