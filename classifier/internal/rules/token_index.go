package rules

import (
	"sort"
	"strings"
	"sync"
)

// tokenIndexMatcher indexes keywords by their first token. Matching walks the
// tokens of the normalized text once: a hash lookup per token finds the
// one-word keyword equal to it, if any, and the phrases that start with it,
// whose remaining tokens are compared against the text that follows. Its size
// is about the size of the keyword strings, against about 4 KB per trie node
// for cloudflare's automaton.
type tokenIndexMatcher struct {
	dict dictionary
	// first maps a first token to its entry.
	first   map[string]int32
	entries []tokenEntry
	// phrases holds every entry's phrase continuations, grouped by entry and
	// sorted by rest within a group.
	phrases []phraseTail
	scratch sync.Pool // *seenSet
}

type tokenEntry struct {
	single int32 // term index of the one-word keyword, -1 if none
	lo, hi int32 // this entry's range in phrases
}

type phraseTail struct {
	rest string // the phrase after its first token and the space after it
	term int32
}

// seenSet deduplicates term indices within one Match call without clearing:
// a term is seen when its stamp equals the current generation.
type seenSet struct {
	gen   uint32
	stamp []uint32
	// slot[t] is term t's place in the hits of a counting scan (allocated
	// by the first one).
	slot []int32
}

// linearPhraseScan is the group size up to which phrase candidates are
// compared one by one rather than found by binary search.
const linearPhraseScan = 8

// NewTokenIndexMatcher builds the token and phrase index Matcher, the
// compact alternative to the Aho-Corasick automaton with the same whole-word
// semantics. Keywords are normalized here.
func NewTokenIndexMatcher(keywords []string) Matcher {
	m := &tokenIndexMatcher{dict: newDictionary(keywords)}
	terms := m.dict.terms
	m.first = make(map[string]int32, len(terms))
	entryOf := make([]int32, len(terms))
	nPhrases := 0
	for t, term := range terms {
		head, _, isPhrase := strings.Cut(term, " ")
		e, ok := m.first[head]
		if !ok {
			e = int32(len(m.entries))
			m.first[head] = e
			m.entries = append(m.entries, tokenEntry{single: -1})
		}
		entryOf[t] = e
		if isPhrase {
			m.entries[e].hi++ // count for now
			nPhrases++
		} else {
			m.entries[e].single = int32(t)
		}
	}
	// Counting sort of the phrases into per-entry groups.
	var next int32
	for i := range m.entries {
		n := m.entries[i].hi
		m.entries[i].lo, m.entries[i].hi = next, next
		next += n
	}
	m.phrases = make([]phraseTail, nPhrases)
	for t, term := range terms {
		if _, rest, isPhrase := strings.Cut(term, " "); isPhrase {
			e := &m.entries[entryOf[t]]
			m.phrases[e.hi] = phraseTail{rest: rest, term: int32(t)}
			e.hi++
		}
	}
	for _, e := range m.entries {
		if group := m.phrases[e.lo:e.hi]; len(group) > linearPhraseScan {
			sort.Slice(group, func(i, j int) bool { return group[i].rest < group[j].rest })
		}
	}
	n := len(terms)
	m.scratch.New = func() any { return &seenSet{stamp: make([]uint32, n)} }
	return m
}

func (m *tokenIndexMatcher) Match(text string) []int {
	terms, _ := m.scan(text, false)
	return terms
}

// MatchCounts is Match with how many times each keyword occurs (TermCounter).
func (m *tokenIndexMatcher) MatchCounts(text string) (terms, counts []int) {
	return m.scan(text, true)
}

// scan walks text's tokens once, finding every keyword and, when counting,
// how many times each occurs.
func (m *tokenIndexMatcher) scan(text string, counting bool) (terms, counts []int) {
	if len(m.entries) == 0 || text == "" {
		return nil, nil
	}
	seen := m.scratch.Get().(*seenSet)
	defer m.scratch.Put(seen)
	seen.gen++
	if seen.gen == 0 { // wrapped: old stamps could collide
		clear(seen.stamp)
		seen.gen = 1
	}
	if counting && seen.slot == nil {
		seen.slot = make([]int32, len(seen.stamp))
	}
	var hits, n []int
	mark := func(t int32) {
		if seen.stamp[t] == seen.gen {
			if counting {
				n[seen.slot[t]]++
			}
			return
		}
		seen.stamp[t] = seen.gen
		if counting {
			seen.slot[t] = int32(len(hits))
			n = append(n, 1)
		}
		hits = append(hits, int(t))
	}
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], ' ')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		e, ok := m.first[text[pos:end]]
		pos = end + 1
		if !ok {
			continue
		}
		entry := &m.entries[e]
		if entry.single >= 0 {
			mark(entry.single)
		}
		if entry.lo == entry.hi || pos >= len(text) {
			continue
		}
		rest := text[pos:]
		group := m.phrases[entry.lo:entry.hi]
		if len(group) <= linearPhraseScan {
			for _, p := range group {
				if hasTokenPrefix(rest, p.rest) {
					mark(p.term)
				}
			}
			continue
		}
		// A sorted group: only the tails that start with the next token can
		// match, and they are contiguous from its lower bound.
		next := rest
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			next = rest[:i]
		}
		i := sort.Search(len(group), func(i int) bool { return group[i].rest >= next })
		for _, p := range group[i:] {
			if !strings.HasPrefix(p.rest, next) {
				break
			}
			if hasTokenPrefix(rest, p.rest) {
				mark(p.term)
			}
		}
	}
	if !counting {
		return m.dict.expand(hits), nil
	}
	return m.dict.expandCounts(hits, n)
}

// hasTokenPrefix reports whether text starts with the tokens of prefix,
// ending at a token boundary.
func hasTokenPrefix(text, prefix string) bool {
	return len(text) >= len(prefix) && text[:len(prefix)] == prefix &&
		(len(text) == len(prefix) || text[len(prefix)] == ' ')
}
