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

// The bit-sliced counts are the 64 plain counters they replace.
func TestBitCountsCountEachBit(t *testing.T) {
	var c bitCounts
	var want [64]int
	x := uint64(0x9e3779b97f4a7c15)
	for range 5000 {
		x = mix(x)
		c.add(x)
		for b := range want {
			want[b] += int(x >> b & 1)
		}
	}
	c.add(^uint64(0))
	for b := range want {
		if got := c.count(b); got != want[b]+1 {
			t.Fatalf("bit %d: %d, want %d", b, got, want[b]+1)
		}
	}
}

// referenceShingles is the first shingles: hash/fnv per shingle, 64 plain
// counters. Stored fingerprints were made by it; the fast one must agree.
func referenceShingles(words []string) (uint64, []int64) {
	var counts [64]int
	var sketch []uint64
	for i := 0; i+3 <= len(words); i++ {
		h := fnv.New64a()
		h.Write([]byte(strings.Join(words[i:i+3], " ")))
		v := mix(h.Sum64())
		sketch = keepSmallest(sketch, v)
		for b := range counts {
			if v&(1<<b) != 0 {
				counts[b]++
			} else {
				counts[b]--
			}
		}
	}
	var sim uint64
	for b, c := range counts {
		if c > 0 {
			sim |= 1 << b
		}
	}
	out := make([]int64, len(sketch))
	for i, v := range sketch {
		out[i] = int64(v)
	}
	return sim, out
}

func TestShinglesMatchTheReference(t *testing.T) {
	for n, text := range []string{
		strings.Repeat("Officials said more details would be released later in the week. ", 9),
		"The city council voted on Tuesday to approve a new budget for the coming year after a long debate over transit funding and property taxes and snow clearing on side streets in the east end of the city near the library branches and the new fire station in the north end which the chief said would cut response times by two minutes",
		"a b",
	} {
		_, words := normalize(text)
		sim, sk := shingles(words)
		rsim, rsk := referenceShingles(words)
		if sim != rsim || !slices.Equal(sk, rsk) {
			t.Errorf("text %d: sim %x sketch %v, want %x %v", n, sim, sk, rsim, rsk)
		}
	}
}
