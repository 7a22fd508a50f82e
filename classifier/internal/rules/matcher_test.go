package rules

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var matcherKinds = []MatcherKind{MatcherAhoCorasick, MatcherTokenIndex, MatcherNaive}

func mustMatcher(t testing.TB, kind MatcherKind, keywords []string) Matcher {
	t.Helper()
	m, err := NewMatcher(kind, keywords)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sorted(ids []int) []int {
	out := slices.Clone(ids)
	slices.Sort(out)
	if out == nil {
		out = []int{}
	}
	return out
}

// TestMatchers is the conformance suite every Matcher passes.
func TestMatchers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		keywords []string
		text     string
		want     []int
	}{
		{"inside a word is not a match", []string{"gun", "rob"}, "It had begun; a problem.", nil},
		{"punctuation is a boundary", []string{"gun"}, "a gun, then", []int{0}},
		{"period", []string{"gun"}, "the gun.", []int{0}},
		{"parentheses", []string{"gun"}, "(gun)", []int{0}},
		{"start and end of text", []string{"gun", "fire"}, "Gun or fire", []int{0, 1}},
		{"whole text", []string{"gun"}, "gun", []int{0}},
		{"prefix of a word", []string{"gun"}, "gunfire", nil},
		{"suffix of a word", []string{"fire"}, "gunfire", nil},
		{"phrase", []string{"drug trafficking"}, "charged with drug trafficking today", []int{0}},
		{"phrase across punctuation", []string{"drug trafficking"}, "Drug-trafficking", []int{0}},
		{"phrase across a punctuation run", []string{"drug trafficking"}, "drug... (trafficking)", []int{0}},
		{"phrase at start and end", []string{"drug trafficking"}, "Drug trafficking", []int{0}},
		{"phrase not a prefix of a longer word", []string{"drug trafficking"}, "drug traffickings", nil},
		{"phrase not inside a word", []string{"drug trafficking"}, "drugs trafficking", nil},
		{"phrase split is not a match", []string{"drug trafficking"}, "drug and trafficking", nil},
		{"phrase longer than text", []string{"drug trafficking ring"}, "drug trafficking", nil},
		{"hyphenated keyword", []string{"break-in"}, "a break in, a Break-in, a break—in", []int{0}},
		{"hyphenated keyword is not a joined word", []string{"break-in"}, "a breakin", nil},
		{"accents folded in text", []string{"cafe"}, "Le Café", []int{0}},
		{"accents folded in keyword", []string{"Montréal"}, "MONTREAL police", []int{0}},
		{"apostrophe in keyword", []string{"o'brien"}, "Constable O’Brien said", []int{0}},
		{"possessive", []string{"city"}, "the city's mayor", []int{0}},
		{"repeated keyword reported once", []string{"gun"}, "gun gun gun, gun", []int{0}},
		{"overlapping phrases sharing a word", []string{"a b", "b c"}, "a b c", []int{0, 1}},
		{"nested phrases", []string{"new york", "york", "new york city", "city"}, "New York City", []int{0, 1, 2, 3}},
		{"unicode words", []string{"москва", "αθήνα"}, "Москва и Αθήνα", []int{0, 1}},
		{"duplicates report every index", []string{"gun", "Gun", "GUN!"}, "gun", []int{0, 1, 2}},
		{"empty keywords never match", []string{"", "  ", "!!", "gun"}, "gun !!", []int{3}},
		{"soft hyphen inside a word", []string{"murder"}, "mur\u00adder", []int{0}},
		{"digits", []string{"covid-19"}, "COVID 19 cases", []int{0}},
		{"no keywords", nil, "gun", nil},
		{"empty text", []string{"gun"}, "", nil},
		{"many phrases with one first token", []string{
			"x a", "x b", "x c", "x d", "x e", "x f", "x g", "x h", "x i", "x j", "x a b", "x aa", "x", "x b a",
		}, "x a b; x b, x", []int{0, 1, 10, 12}},
	}
	for _, kind := range matcherKinds {
		for _, tt := range tests {
			t.Run(string(kind)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				m := mustMatcher(t, kind, tt.keywords)
				got := sorted(m.Match(Normalize(tt.text)))
				if want := sorted(tt.want); !slices.Equal(got, want) {
					t.Errorf("keywords %q, text %q: got %v, want %v", tt.keywords, tt.text, got, want)
				}
			})
		}
	}
}

// TestMatchersAgreeWithOracle checks every matcher against the naive one on
// random keyword sets and texts over a small vocabulary, so that prefixes,
// suffixes, overlaps, repeats and shared first tokens are frequent.
func TestMatchersAgreeWithOracle(t *testing.T) {
	t.Parallel()
	vocab := []string{"a", "b", "ab", "ba", "aa", "abc", "c", "é", "e", "cafe", "Café", "x1", "1"}
	seps := []string{" ", " ", " ", "-", ", ", "'", "’", ". (", "\u00a0", "\u00ad"}
	r := rand.New(rand.NewPCG(5, 6))
	words := vocab
	phrase := func(maxTokens int) string {
		var b strings.Builder
		for i := range 1 + r.IntN(maxTokens) {
			if i > 0 {
				b.WriteString(seps[r.IntN(len(seps))])
			}
			w := words[r.IntN(len(words))]
			if r.IntN(4) == 0 {
				w = strings.ToUpper(w)
			}
			b.WriteString(w)
		}
		return b.String()
	}
	for iter := range 3000 {
		// Every other iteration uses a tiny vocabulary and many keywords, so
		// that many phrases share a first token (the token index's sorted
		// groups).
		words = vocab
		n := r.IntN(40)
		if iter%2 == 0 {
			words, n = vocab[:4], 20+r.IntN(60)
		}
		keywords := make([]string, n)
		for i := range keywords {
			keywords[i] = phrase(3)
		}
		text := Normalize(phrase(30))
		if r.IntN(3) == 0 {
			text += " " + fieldSeparator + " " + Normalize(phrase(10))
		}
		want := sorted(NewNaiveMatcher(keywords).Match(text))
		for _, kind := range []MatcherKind{MatcherAhoCorasick, MatcherTokenIndex} {
			got := sorted(mustMatcher(t, kind, keywords).Match(text))
			if !slices.Equal(got, want) {
				t.Fatalf("iteration %d, %s: keywords %q, text %q: got %v, naive %v", iter, kind, keywords, text, got, want)
			}
		}
		checkCounts(t, mustMatcher(t, MatcherTokenIndex, keywords).(TermCounter), keywords, text, want)
	}
}

// checkCounts checks a counting match against Match's keywords (want,
// sorted) and a count of every whole-token occurrence, overlaps included.
func checkCounts(t *testing.T, m TermCounter, keywords []string, text string, want []int) {
	t.Helper()
	terms, counts := m.MatchCounts(text)
	if len(terms) != len(counts) || !slices.Equal(sorted(slices.Clone(terms)), want) {
		t.Fatalf("keywords %q, text %q: MatchCounts found %v (counts %v), Match %v", keywords, text, terms, counts, want)
	}
	padded := " " + text + " "
	for i, k := range terms {
		kw := " " + Normalize(keywords[k]) + " "
		n := 0
		for at := 0; ; at++ {
			j := strings.Index(padded[at:], kw)
			if j < 0 {
				break
			}
			n, at = n+1, at+j
		}
		if counts[i] != n {
			t.Fatalf("keywords %q, text %q: keyword %q counted %d, occurs %d times", keywords, text, keywords[k], counts[i], n)
		}
	}
}

func FuzzMatchersAgree(f *testing.F) {
	f.Add("gun,drug trafficking,break-in", "Drug-trafficking and a gun; begun")
	f.Add("a b,b c,a", "a b c a")
	f.Add("café,o'brien", "CAFE O’Brien")
	f.Fuzz(func(t *testing.T, keywordList, text string) {
		keywords := strings.Split(keywordList, ",")
		norm := Normalize(text)
		want := sorted(NewNaiveMatcher(keywords).Match(norm))
		for _, kind := range []MatcherKind{MatcherAhoCorasick, MatcherTokenIndex} {
			if got := sorted(mustMatcher(t, kind, keywords).Match(norm)); !slices.Equal(got, want) {
				t.Fatalf("%s: keywords %q, text %q: got %v, naive %v", kind, keywords, norm, got, want)
			}
		}
	})
}

func TestMatcherConcurrentUse(t *testing.T) {
	t.Parallel()
	keywords := []string{"gun", "drug trafficking", "fire", "police chief"}
	text := Normalize("The police chief said a gun was found; drug trafficking, fire.")
	for _, kind := range matcherKinds {
		m := mustMatcher(t, kind, keywords)
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			done := make(chan []int)
			for range 8 {
				go func() {
					var last []int
					for range 200 {
						last = sorted(m.Match(text))
					}
					done <- last
				}()
			}
			for range 8 {
				if got := <-done; !slices.Equal(got, []int{0, 1, 2, 3}) {
					t.Errorf("got %v", got)
				}
			}
		})
	}
}

func TestParseMatcherKind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]MatcherKind{
		"": MatcherKindDefault, "aho_corasick": MatcherAhoCorasick, " token_index ": MatcherTokenIndex, "naive": MatcherNaive,
	} {
		if got, err := ParseMatcherKind(in); err != nil || got != want {
			t.Errorf("ParseMatcherKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMatcherKind("trie"); err == nil {
		t.Error("ParseMatcherKind(trie): no error")
	}
	if _, err := NewMatcher("trie", nil); err == nil {
		t.Error("NewMatcher(trie): no error")
	}
}

func ExampleNormalize() {
	fmt.Println(Normalize("Police: a Break-in at the Café, O’Brien's car stolen!"))
	// Output: police a break in at the cafe o brien s car stolen
}

// The Aho-Corasick matcher writes the words of phrases in codes of 1 to 4
// bytes, the width growing with the number of such words (128 words fit in
// one byte, 16,256 in two): with many phrase words, where codes of several
// bytes could line up across word boundaries, it still finds exactly what
// the naive scan finds.
func TestAhoCorasickWideCodesAgreeWithOracle(t *testing.T) {
	t.Parallel()
	for _, nWords := range []int{100, 300, 20000} {
		r := rand.New(rand.NewPCG(uint64(nWords), 7))
		words := make([]string, nWords)
		for i := range words {
			words[i] = fmt.Sprintf("w%dx", i)
		}
		var keywords []string
		for i := 0; i < nWords; i += 2 { // every word in a phrase
			keywords = append(keywords, words[i]+" "+words[(i+1)%nWords])
		}
		for range 200 { // and some one-word keywords and longer phrases
			keywords = append(keywords, words[r.IntN(nWords)])
			keywords = append(keywords, words[r.IntN(nWords)]+" "+words[r.IntN(nWords)]+" "+words[r.IntN(nWords)])
		}
		m := mustMatcher(t, MatcherAhoCorasick, keywords)
		naive := NewNaiveMatcher(keywords)
		for iter := range 200 {
			var b strings.Builder
			for i := range 60 {
				if i > 0 {
					b.WriteString(" ")
				}
				switch p := r.IntN(10); {
				case p == 0:
					b.WriteString("other")
				case p == 1:
					b.WriteString(fieldSeparator)
				case p < 5: // the continuation of a phrase
					k := keywords[r.IntN(len(keywords))]
					b.WriteString(k)
				default:
					b.WriteString(words[r.IntN(nWords)])
				}
			}
			text := b.String()
			want, got := sorted(naive.Match(text)), sorted(m.Match(text))
			if !slices.Equal(got, want) {
				t.Fatalf("%d words, iteration %d: text %q: got %v, naive %v", nWords, iter, text, got, want)
			}
		}
	}
}
