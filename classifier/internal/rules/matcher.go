package rules

import (
	"fmt"
	"strings"
)

// Matcher finds which keywords occur as whole words or whole phrases in
// normalized text. Implementations are immutable after construction and safe
// for concurrent use.
type Matcher interface {
	// Match returns the indices, into the keyword list the matcher was built
	// from, of every keyword that occurs in text, each index once and in no
	// particular order. text must be the output of Normalize (tokens separated
	// by single spaces), optionally several such outputs joined by the field
	// separator the Engine uses. Keywords that normalize to "" never match; a
	// keyword listed twice reports both indices.
	Match(text string) []int
}

// TermCounter is a Matcher that can also count how many times each keyword
// occurs (the token index can; a topic model with term frequencies is
// matched with it).
type TermCounter interface {
	Matcher
	// MatchCounts is Match with counts[i], how many times the keyword of
	// terms[i] occurs in text (overlapping phrases each counted).
	MatchCounts(text string) (terms, counts []int)
}

// MatcherKind selects a Matcher implementation by configuration.
type MatcherKind string

const (
	// MatcherAhoCorasick is cloudflare/ahocorasick over space-padded text and
	// keywords: the default, as the spec asks. Its automaton runs over word
	// codes (phrases only; one-word keywords are found by the code lookup),
	// since cloudflare's takes 4 KB per dictionary byte: see
	// ahoCorasickMatcher.
	MatcherAhoCorasick MatcherKind = "aho_corasick"
	// MatcherTokenIndex is a hash index from a keyword's first token to the
	// keyword and the phrases that start with it: small, quick to rebuild.
	MatcherTokenIndex MatcherKind = "token_index"
	// MatcherNaive scans the text once per keyword: the test oracle and the
	// benchmark baseline, not for production.
	MatcherNaive MatcherKind = "naive"

	// MatcherKindDefault is the matcher used when configuration names none.
	MatcherKindDefault = MatcherAhoCorasick
)

// ParseMatcherKind returns the MatcherKind named s, MatcherKindDefault for "".
func ParseMatcherKind(s string) (MatcherKind, error) {
	switch k := MatcherKind(strings.TrimSpace(s)); k {
	case "":
		return MatcherKindDefault, nil
	case MatcherAhoCorasick, MatcherTokenIndex, MatcherNaive:
		return k, nil
	}
	return "", fmt.Errorf("rules: unknown matcher kind %q (want %q, %q or %q)",
		s, MatcherAhoCorasick, MatcherTokenIndex, MatcherNaive)
}

// NewMatcher builds the Matcher of the given kind over keywords.
func NewMatcher(kind MatcherKind, keywords []string) (Matcher, error) {
	switch kind {
	case MatcherAhoCorasick:
		return NewAhoCorasickMatcher(keywords), nil
	case MatcherTokenIndex:
		return NewTokenIndexMatcher(keywords), nil
	case MatcherNaive:
		return NewNaiveMatcher(keywords), nil
	}
	_, err := ParseMatcherKind(string(kind))
	return nil, err
}

// dictionary is the distinct, non-empty normalized keywords ("terms") a
// matcher is built over, and the way back from a term to the caller's keyword
// indices. When the caller's keywords are already distinct and non-empty
// (the Engine's case) term i is keyword i and no translation happens.
type dictionary struct {
	terms []string
	// inputs[t] lists the keyword indices that normalize to term t; nil when
	// identity holds.
	inputs [][]int
}

func newDictionary(keywords []string) dictionary {
	var d dictionary
	d.terms = make([]string, 0, len(keywords))
	index := make(map[string]int, len(keywords))
	inputs := make([][]int, 0, len(keywords))
	identity := true
	for i, kw := range keywords {
		n := Normalize(kw)
		if n == "" {
			identity = false
			continue
		}
		if t, ok := index[n]; ok {
			identity = false
			inputs[t] = append(inputs[t], i)
			continue
		}
		index[n] = len(d.terms)
		d.terms = append(d.terms, n)
		inputs = append(inputs, []int{i})
	}
	if !identity {
		d.inputs = inputs
	}
	return d
}

// expand turns term indices into the caller's keyword indices, in place when
// identity holds.
func (d *dictionary) expand(terms []int) []int {
	if d.inputs == nil || len(terms) == 0 {
		return terms
	}
	out := make([]int, 0, len(terms))
	for _, t := range terms {
		out = append(out, d.inputs[t]...)
	}
	return out
}

// expandCounts is expand for a counting match: each keyword index gets its
// term's count.
func (d *dictionary) expandCounts(terms, counts []int) ([]int, []int) {
	if d.inputs == nil || len(terms) == 0 {
		return terms, counts
	}
	out := make([]int, 0, len(terms))
	outCounts := make([]int, 0, len(terms))
	for i, t := range terms {
		for _, k := range d.inputs[t] {
			out = append(out, k)
			outCounts = append(outCounts, counts[i])
		}
	}
	return out, outCounts
}
