package api

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/north-cloud/classifier/internal/rules"
)

// TestTokenizeAgreesWithNormalize checks that the tokens the highlighter
// finds are exactly the words the engine matches on.
func TestTokenizeAgreesWithNormalize(t *testing.T) {
	t.Parallel()
	texts := []string{
		"",
		"Plain ASCII text, with punctuation!",
		"  Break-in at the CAFÉ: Montréal's café — 3 suspects  ",
		"O'Brien’s soft\u00adhyphen and zero\u200bwidth space",
		"ﬁne ligature, full-width ＡＢＣ, ½ cup",
		"emoji 🚓 police 🚨 car",
		"Ελληνικά κείμενο και русский текст",
		"invalid \xff byte",
		"decomposed e\u0301cole",
	}
	for _, text := range texts {
		toks := tokenize(text)
		words := make([]string, len(toks))
		for i, tk := range toks {
			words[i] = tk.norm
			// A span normalizes to its token, or to several when one rune
			// decomposes into more than one word ("½" is "1 2").
			if got := rules.Normalize(text[tk.byteStart:tk.byteEnd]); !slices.Contains(strings.Split(got, " "), tk.norm) {
				t.Errorf("%q: token %q spans %q which normalizes to %q", text, tk.norm, text[tk.byteStart:tk.byteEnd], got)
			}
		}
		if got, want := strings.Join(words, " "), rules.Normalize(text); got != want {
			t.Errorf("tokenize(%q) = %q, Normalize = %q", text, got, want)
		}
	}
}

func TestFieldTextFind(t *testing.T) {
	t.Parallel()
	text := "🚨 Break-In reported: a BREAK IN at the café; the problem began, gun begun. Gun!"
	f := newFieldText("body", text)
	tests := []struct {
		keyword string
		want    []string
	}{
		{"break-in", []string{"Break-In", "BREAK IN"}},
		{"cafe", []string{"café"}},
		{"gun", []string{"gun", "Gun"}},
		{"rob", nil},
		{"reported a break", []string{"reported: a BREAK"}},
		{"!!!", nil},
	}
	units := utf16.Encode([]rune(text))
	for _, tt := range tests {
		got := f.find(tt.keyword)
		if len(got) != len(tt.want) {
			t.Errorf("find(%q) = %+v, want %q", tt.keyword, got, tt.want)
			continue
		}
		for i, h := range got {
			if h.Text != tt.want[i] || text[h.ByteStart:h.ByteEnd] != tt.want[i] {
				t.Errorf("find(%q)[%d] = %+v, want %q", tt.keyword, i, h, tt.want[i])
			}
			// The UTF-16 offsets select the same text in JavaScript.
			if js := string(utf16.Decode(units[h.Start:h.End])); js != tt.want[i] {
				t.Errorf("find(%q)[%d]: UTF-16 span selects %q, want %q", tt.keyword, i, js, tt.want[i])
			}
			if h.Field != "body" || h.Keyword != tt.keyword {
				t.Errorf("find(%q)[%d] = %+v", tt.keyword, i, h)
			}
		}
	}
}

func TestFieldTextFindCapsHighlights(t *testing.T) {
	t.Parallel()
	f := newFieldText("text", strings.Repeat("gun ", 1000))
	if n := len(f.find("gun")); n != MaxHighlightsPerKeyword {
		t.Errorf("%d highlights, want %d", n, MaxHighlightsPerKeyword)
	}
}

// TestFindStemmed checks that with stemming a keyword highlights its
// inflections, whole words only, as an engine with stemming matches them.
func TestFindStemmed(t *testing.T) {
	t.Parallel()
	text := "Acme acquired Widget; it acquires more. Acquisitions? Reacquired."
	f := newFieldTextStemmed("body", text, true)
	var got []string
	for _, h := range f.find("acquire") {
		got = append(got, h.Text)
	}
	if strings.Join(got, ",") != "acquired,acquires" {
		t.Errorf("stemmed find(acquire) = %v, want acquired, acquires", got)
	}
	if n := len(newFieldText("body", text).find("acquire")); n != 0 {
		t.Errorf("unstemmed find(acquire) = %d highlights, want 0", n)
	}
}
