package rules

import (
	ahocorasick "github.com/cloudflare/ahocorasick"
)

// ahoCorasickMatcher runs cloudflare/ahocorasick over the text padded with a
// space at each end, with every keyword padded the same way (" gun "). In
// normalized text a space sits exactly at each word boundary, so a padded
// keyword occurs only as a whole word or phrase. Overlapping padded matches
// that share a space (" a b " and " b c " in " a b c ") are all found, since
// Aho-Corasick reports overlapping occurrences.
type ahoCorasickMatcher struct {
	dict dictionary
	ac   *ahocorasick.Matcher
}

// NewAhoCorasickMatcher builds the default Matcher: cloudflare/ahocorasick,
// queried only through MatchThreadSafe (its Match keeps state in the matcher
// and is not safe for concurrent use). MatchThreadSafe reports each keyword
// once per text however often it occurs, which is the presence semantics all
// matchers share. Keywords are normalized here.
func NewAhoCorasickMatcher(keywords []string) Matcher {
	m := &ahoCorasickMatcher{dict: newDictionary(keywords)}
	if len(m.dict.terms) == 0 {
		return m
	}
	padded := make([][]byte, len(m.dict.terms))
	for i, t := range m.dict.terms {
		p := make([]byte, len(t)+2)
		p[0] = ' '
		copy(p[1:], t)
		p[len(p)-1] = ' '
		padded[i] = p
	}
	m.ac = ahocorasick.NewMatcher(padded)
	return m
}

func (m *ahoCorasickMatcher) Match(text string) []int {
	if m.ac == nil || text == "" {
		return nil
	}
	buf := make([]byte, len(text)+2)
	buf[0] = ' '
	copy(buf[1:], text)
	buf[len(buf)-1] = ' '
	return m.dict.expand(m.ac.MatchThreadSafe(buf))
}
