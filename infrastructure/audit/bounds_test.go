package audit

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundParameters(t *testing.T) {
	t.Parallel()
	small := []byte(`{"confirm":true}`)
	if got := BoundParameters(small); string(got) != string(small) {
		t.Fatalf("small parameters changed: %s", got)
	}
	for _, pad := range []string{strings.Repeat("x", 1<<20), strings.Repeat("\"", 1<<16), strings.Repeat("é", 1<<15)} {
		p, _ := json.Marshal(map[string]any{"pad": pad})
		got := BoundParameters(p)
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil || len(got) > MaxParametersBytes || m[TruncatedMarker] != true || m["original_bytes"] != float64(len(p)) {
			t.Fatalf("bounded %d bytes to %d: %v %.200s", len(p), len(got), err, got)
		}
		if ex, _ := m["excerpt"].(string); ex == "" || !utf8.ValidString(ex) {
			t.Fatalf("excerpt %q", ex)
		}
	}
}

func TestBoundTextAndSafeActor(t *testing.T) {
	t.Parallel()
	if got := BoundText(strings.Repeat("é", 5000), MaxErrorBytes); len(got) > MaxErrorBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, truncatedSuffix) {
		t.Fatalf("bounded text: %d bytes", len(got))
	}
	if got := BoundText("a\x00b\xff", 100); got != "ab\uFFFD" {
		t.Fatalf("NUL and invalid UTF-8: %q", got)
	}
	for _, plain := range []string{"operator", "bob@example.org", "Zoë Ångström", "a b"} {
		if got := SafeActor(plain); got != plain {
			t.Errorf("%q changed to %q", plain, got)
		}
	}
	for _, odd := range []string{"a\nb", "\x1b[31mred", "nul\x00", "bad\xff", "rtl\u202e", "tab\t"} {
		got := SafeActor(odd)
		if got != strconv.QuoteToGraphic(odd) {
			t.Errorf("%q stored as %q", odd, got)
		}
	}
	if got := SafeActor(strings.Repeat("\n", 300)); utf8.RuneCountInString(got) > MaxActorChars {
		t.Errorf("long actor kept %d characters", utf8.RuneCountInString(got))
	}
}
