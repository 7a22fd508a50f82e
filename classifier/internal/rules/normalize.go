package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// fieldSeparator joins the normalized title and body in Engine.Match. It is a
// token of its own that Normalize never produces, so no keyword (a phrase in
// particular) can match across the two fields.
const fieldSeparator = "\n"

// Normalize returns text lowercased, with accents removed and every run of
// characters that are not letters or digits turned into one space, without
// leading or trailing spaces. Keywords and text are normalized alike, so
// matching on the result respects word boundaries. The package documentation
// lists the decisions (accents, hyphens, apostrophes). Normalize is
// idempotent. Bounding the size of text is the caller's job.
func Normalize(text string) string {
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return normalizeUnicode(text)
		}
	}
	return normalizeASCII(text)
}

// normalizeASCII is the fast path for pure ASCII text; it gives the same
// result as normalizeUnicode on such text.
func normalizeASCII(s string) string {
	b := make([]byte, 0, len(s))
	pendingSpace := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		default:
			pendingSpace = len(b) > 0
			continue
		}
		if pendingSpace {
			b = append(b, ' ')
			pendingSpace = false
		}
		b = append(b, c)
	}
	return string(b)
}

func normalizeUnicode(s string) string {
	s = norm.NFKD.String(s)
	var b strings.Builder
	b.Grow(len(s))
	pendingSpace := false
	for _, r := range s {
		if isDeleted(r) || unicode.Is(unicode.Mn, r) {
			continue
		}
		r = unicode.ToLower(r)
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mc, r) {
			pendingSpace = b.Len() > 0
			continue
		}
		if pendingSpace {
			b.WriteByte(' ')
			pendingSpace = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isDeleted reports the invisible format characters that scraped text
// carries inside words: they are removed rather than made boundaries.
func isDeleted(r rune) bool {
	switch r {
	case '\u00ad', // soft hyphen
		'\u200c', // zero-width non-joiner
		'\u200d', // zero-width joiner
		'\u2060', // word joiner
		'\ufeff': // byte order mark, zero-width no-break space
		return true
	}
	return false
}
