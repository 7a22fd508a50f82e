package rules

import "strings"

// naiveMatcher looks for every padded keyword in the padded text, one scan
// per keyword: O(keywords x text).
type naiveMatcher struct {
	dict   dictionary
	padded []string
}

// NewNaiveMatcher builds the per-keyword scan used as the oracle in tests and
// the baseline in benchmarks. Keywords are normalized here.
func NewNaiveMatcher(keywords []string) Matcher {
	m := &naiveMatcher{dict: newDictionary(keywords)}
	m.padded = make([]string, len(m.dict.terms))
	for i, t := range m.dict.terms {
		m.padded[i] = " " + t + " "
	}
	return m
}

func (m *naiveMatcher) Match(text string) []int {
	if len(m.padded) == 0 || text == "" {
		return nil
	}
	padded := " " + text + " "
	var hits []int
	for i, p := range m.padded {
		if strings.Contains(padded, p) {
			hits = append(hits, i)
		}
	}
	return m.dict.expand(hits)
}
