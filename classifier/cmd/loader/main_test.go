package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/north-cloud/infrastructure/esclient"
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

// A steady write is tried again when the node did not take it (no answer,
// 429, 5xx: a node restarting) and not when the document was refused.
func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("dial tcp 127.0.0.1:9200: connect: connection refused"), true},
		{&esclient.ResponseError{Status: 429}, true},
		{&esclient.ResponseError{Status: 503}, true},
		{fmt.Errorf("index: %w", &esclient.ResponseError{Status: 500}), true},
		{&esclient.ResponseError{Status: 400}, false},
		{&esclient.ResponseError{Status: 409}, false},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}
