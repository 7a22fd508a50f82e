package fingerprint

import (
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// fnv64a is hash/fnv's FNV-1a of the words joined by spaces, so stored
// fingerprints keep their values.
func TestInlineFNVIsHashFNV(t *testing.T) {
	for _, words := range [][]string{
		{"the", "city", "council"}, {"", "a", ""}, {"é", "ß", "東京"}, {strings.Repeat("x", 300), "y", "z"},
	} {
		h := fnv.New64a()
		h.Write([]byte(strings.Join(words, " ")))
		if got, want := fnv64a(words), h.Sum64(); got != want {
			t.Errorf("%q: %x, want %x", words, got, want)
		}
	}
}

func BenchmarkOf(b *testing.B) {
	body := strings.Repeat("Officials said more details would be released later in the week. Residents in the area described the scene to reporters on Monday. ", 25)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		Of("Council approves budget as mayor looks to election", body)
	}
}

// referenceWords is the first normalize: a rune at a time, one string per
// word. The fast one must give the same words and text.
func referenceWords(texts ...string) []string {
	var words []string
	for _, s := range texts {
		var w strings.Builder
		for _, r := range s {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				w.WriteRune(unicode.ToLower(r))
				continue
			}
			if w.Len() > 0 {
				words = append(words, w.String())
				w.Reset()
			}
		}
		if w.Len() > 0 {
			words = append(words, w.String())
		}
	}
	return words
}

func checkNormalize(t *testing.T, title, body string) {
	t.Helper()
	text, words := normalize(title, body)
	want := referenceWords(title, body)
	if !slices.Equal(words, want) || text != strings.Join(want, " ") {
		t.Fatalf("normalize(%q, %q) = %q, %q; want %q", title, body, text, words, want)
	}
}

func TestNormalizeMatchesTheReference(t *testing.T) {
	for _, c := range [][2]string{
		{"", ""}, {"Title", ""}, {"", "body"}, {"Ends with word", "Starts"}, {"A-B c.d", "  e\tF\n"},
		{"ÉCOLE Straße", "東京 ٣ İstanbul ǅ"}, {"x\xffy", "z\u00a0w"}, {"42 APPLES", "...and 7 more!"},
	} {
		checkNormalize(t, c[0], c[1])
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add("Council approves budget", "The city council met on Tuesday.")
	f.Add("ÉCOLE", "x\xffy 東京")
	f.Fuzz(checkNormalize)
}
