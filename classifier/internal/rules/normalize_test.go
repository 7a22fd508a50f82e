package rules

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"only punctuation", " ,.;!? -- ", ""},
		{"lowercase and trim", "  Hello WORLD  ", "hello world"},
		{"punctuation runs are one space", "gun,(gun).gun!!  gun", "gun gun gun gun"},
		{"hyphen is a boundary", "break-in", "break in"},
		{"em dash is a boundary", "break—in", "break in"},
		{"apostrophe is a boundary", "O'Brien", "o brien"},
		{"typographic apostrophe", "O’Brien’s", "o brien s"},
		{"possessive", "the city's mayor", "the city s mayor"},
		{"accents folded", "Café Montréal Zürich naïve", "cafe montreal zurich naive"},
		{"undecomposable letters kept", "Ørsted Łódź Straße", "ørsted łodz straße"},
		{"digits kept", "COVID-19 9mm", "covid 19 9mm"},
		{"full-width folds", "ＧＵＮ", "gun"},
		{"ligature folds", "ﬁre", "fire"},
		{"soft hyphen deleted", "mur\u00adder", "murder"},
		{"zero-width joiner deleted", "gu\u200dn", "gun"},
		{"zero-width space is a boundary", "gun\u200bfire", "gun fire"},
		{"nbsp and tabs", "gun\u00a0\tfire\n", "gun fire"},
		{"greek", "ΑΘΉΝΑ", "αθηνα"},
		{"cyrillic", "Москва", "москва"},
		{"devanagari spacing marks kept in word", "हिंदी भाषा", "हिदी भाषा"},
		{"invalid utf-8 is a boundary", "gun\xffshot", "gun shot"},
		{"underscore is a boundary", "drug_crime", "drug crime"},
		{"emoji is a boundary", "gun🔫shot", "gun shot"},
		{"turkish dotted capital", "İstanbul", "istanbul"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Normalize(tt.in); got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// randomUnicode draws runes from ranges that exercise case, accents,
// compatibility forms, marks, format characters and punctuation.
func randomUnicode(r *rand.Rand, n int) string {
	ranges := [][2]rune{
		{0x20, 0x7e}, {0xa0, 0x24f}, {0x300, 0x36f}, {0x370, 0x3ff}, {0x400, 0x4ff},
		{0x900, 0x97f}, {0x1e00, 0x1eff}, {0x2000, 0x206f}, {0x2100, 0x214f},
		{0xfb00, 0xfb06}, {0xff01, 0xff5e}, {0x1f600, 0x1f64f},
	}
	var b strings.Builder
	for range n {
		rg := ranges[r.IntN(len(ranges))]
		b.WriteRune(rg[0] + rune(r.IntN(int(rg[1]-rg[0]+1))))
	}
	if r.IntN(10) == 0 {
		b.WriteByte(0xff) // invalid UTF-8
	}
	return b.String()
}

func TestNormalizeProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		in := randomUnicode(r, r.IntN(40))
		got := Normalize(in)
		if again := Normalize(got); again != got {
			t.Fatalf("not idempotent: Normalize(%q) = %q, Normalize of that = %q", in, got, again)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Normalize(%q) = %q is not valid UTF-8", in, got)
		}
		if strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") || strings.Contains(got, "  ") {
			t.Fatalf("Normalize(%q) = %q: spaces not canonical", in, got)
		}
		if strings.Contains(got, fieldSeparator) {
			t.Fatalf("Normalize(%q) = %q contains the field separator", in, got)
		}
	}
}

func TestNormalizeASCIIFastPathAgrees(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		b := make([]byte, r.IntN(60))
		for i := range b {
			b[i] = byte(r.IntN(128))
		}
		if a, u := normalizeASCII(string(b)), normalizeUnicode(string(b)); a != u {
			t.Fatalf("ASCII path %q != Unicode path %q for %q", a, u, b)
		}
	}
}
