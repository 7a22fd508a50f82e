package api

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/north-cloud/classifier/internal/rules"
)

// MaxHighlightsPerKeyword bounds the positions reported for one keyword in
// one field, so a keyword repeated thousands of times does not blow up the
// response.
const MaxHighlightsPerKeyword = 100

// Highlight is one occurrence of a matched keyword in the posted text, as
// offsets into the original (not normalized) field, ready to wrap in a <mark>.
type Highlight struct {
	// Keyword is the rule's keyword as the rule spells it.
	Keyword string `json:"keyword"`
	// Field is "title", "body" or "text": which posted field it is in.
	Field string `json:"field"`
	// Start and End are UTF-16 code unit offsets (JavaScript's
	// String.prototype.slice), End exclusive.
	Start int `json:"start"`
	End   int `json:"end"`
	// ByteStart and ByteEnd are the same span in UTF-8 bytes.
	ByteStart int `json:"byte_start"`
	ByteEnd   int `json:"byte_end"`
	// Text is the span as written in the field ("Break-In").
	Text string `json:"text"`
}

// token is one word of a text after rules.Normalize, with the span of the
// original text it came from.
type token struct {
	norm                 string
	byteStart, byteEnd   int
	utf16Start, utf16End int
}

// tokenize splits s into the words rules.Normalize produces (joined by
// single spaces, they equal rules.Normalize(s)), keeping for each word the
// span of s it came from. It follows Normalize's decisions rune by rune:
// NFKD, nonspacing marks and invisible format characters dropped without
// breaking a word, letters, digits and spacing marks kept, everything else a
// boundary.
func tokenize(s string) []token {
	var toks []token
	var cur strings.Builder
	open := false
	var t token
	closeTok := func() {
		if open {
			t.norm = cur.String()
			toks = append(toks, t)
			cur.Reset()
			open = false
		}
	}
	u16 := 0
	var one [utf8.UTFMax]byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		width := utf16.RuneLen(r)
		if width < 0 {
			width = 1 // invalid UTF-8: JSON decoding makes it U+FFFD anyway
		}
		if r == utf8.RuneError && size == 1 {
			closeTok()
		} else {
			var parts string
			if r < utf8.RuneSelf {
				parts = s[i : i+1]
			} else {
				n := utf8.EncodeRune(one[:], r)
				parts = norm.NFKD.String(string(one[:n]))
			}
			for _, d := range parts {
				if isInvisible(d) || unicode.Is(unicode.Mn, d) {
					continue
				}
				d = unicode.ToLower(d)
				if !unicode.IsLetter(d) && !unicode.IsDigit(d) && !unicode.Is(unicode.Mc, d) {
					closeTok()
					continue
				}
				if !open {
					open = true
					t = token{byteStart: i, utf16Start: u16}
				}
				cur.WriteRune(d)
				t.byteEnd, t.utf16End = i+size, u16+width
			}
		}
		i += size
		u16 += width
	}
	closeTok()
	return toks
}

// isInvisible mirrors the format characters rules.Normalize deletes inside
// words.
func isInvisible(r rune) bool {
	switch r {
	case '\u00ad', '\u200c', '\u200d', '\u2060', '\ufeff':
		return true
	}
	return false
}

// fieldText is one posted field and its tokens, with an index from a word
// to where it occurs. With stem set, words are compared by their stems
// (rules.Stem), as an engine with stemming compares them.
type fieldText struct {
	name  string
	text  string
	stem  bool
	toks  []token
	keys  []string // per token: its norm, or its stem when stem is set
	index map[string][]int
}

func newFieldText(name, text string) *fieldText { return newFieldTextStemmed(name, text, false) }

// newFieldTextStemmed is newFieldText comparing words by their stems when
// stem is set.
func newFieldTextStemmed(name, text string, stem bool) *fieldText {
	f := &fieldText{name: name, text: text, stem: stem, toks: tokenize(text)}
	f.index = make(map[string][]int)
	f.keys = make([]string, len(f.toks))
	for i, t := range f.toks {
		f.keys[i] = f.key(t.norm)
		f.index[f.keys[i]] = append(f.index[f.keys[i]], i)
	}
	return f
}

func (f *fieldText) key(word string) string {
	if f.stem {
		return rules.Stem(word)
	}
	return word
}

// find returns the occurrences of keyword (a whole word or phrase, as the
// engine matches it) in the field, at most MaxHighlightsPerKeyword.
func (f *fieldText) find(keyword string) []Highlight {
	words := strings.Split(rules.Normalize(keyword), " ")
	if len(words) == 0 || words[0] == "" {
		return nil
	}
	for i, w := range words {
		words[i] = f.key(w)
	}
	var out []Highlight
	for _, i := range f.index[words[0]] {
		if i+len(words) > len(f.toks) {
			break
		}
		match := true
		for j := 1; j < len(words); j++ {
			if f.keys[i+j] != words[j] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		first, last := f.toks[i], f.toks[i+len(words)-1]
		out = append(out, Highlight{
			Keyword: keyword, Field: f.name,
			Start: first.utf16Start, End: last.utf16End,
			ByteStart: first.byteStart, ByteEnd: last.byteEnd,
			Text: f.text[first.byteStart:last.byteEnd],
		})
		if len(out) == MaxHighlightsPerKeyword {
			break
		}
	}
	return out
}
