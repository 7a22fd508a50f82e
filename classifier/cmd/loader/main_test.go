package main

import (
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]int{"20-200": {20, 200}, "100": {100, 100}, " 5 - 6 ": {5, 6}} {
		lo, hi, err := parseRange(in)
		if err != nil || lo != want[0] || hi != want[1] {
			t.Errorf("parseRange(%q) = %d, %d, %v; want %v", in, lo, hi, err, want)
		}
	}
	for _, in := range []string{"", "0-5", "9-3", "a-b", "-1"} {
		if _, _, err := parseRange(in); err == nil {
			t.Errorf("parseRange(%q): no error", in)
		}
	}
}

// -html-kb 0 writes the crawler shape's texts without their pages.
func TestCrawlerTextOnly(t *testing.T) {
	next, summary, err := generator("crawler", 5, "0", 0)
	if err != nil {
		t.Fatal(err)
	}
	withPages, _, err := generator("crawler", 5, "20", 0)
	if err != nil {
		t.Fatal(err)
	}
	d, p := next("src", 3), withPages("src", 3)
	if d.RawHTML != "" || d.RawText == "" || d.RawText != p.RawText || d.ID != p.ID {
		t.Fatalf("text only: html %d bytes, text %q; want no page and the same text and id as with pages", len(d.RawHTML), d.RawText)
	}
	if !strings.Contains(summary(), "pages none") {
		t.Errorf("summary %q does not say there are no pages", summary())
	}
}
