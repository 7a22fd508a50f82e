package rules

import (
	"strings"
	"sync"

	ahocorasick "github.com/cloudflare/ahocorasick"
)

// ahoCorasickMatcher is cloudflare/ahocorasick over an alphabet of words
// rather than of bytes.
//
// Why words: cloudflare's automaton allocates one trie node (4 KB: two
// 256-pointer tables) per byte of its dictionary, the whole dictionary's
// length up front, and keeps that array for its lifetime. Over the keywords'
// bytes that was 813 MB for 1,000 rules x 20 keywords (2.5 GB at 5,000), and
// most of the build time went into zeroing it and filling the fail tables.
//
// So every word that occurs in a phrase (a keyword of two words or more) gets
// a fixed-width code of 1 to 4 bytes (width chosen by how many such words
// there are), and a phrase is the concatenation of its words' codes: the
// automaton's dictionary is a few bytes per phrase instead of one byte per
// character, and a node per code byte. A code's first byte is in 0x80-0xFF
// and its others in 0x01-0x7F, so an occurrence can only start at the start
// of a word's code and, all codes having the same width, ends at the end of
// one: phrases match whole words only, as the padded byte automaton did. A
// word of the text that is in no phrase is written as 0x00, which no phrase
// contains, so no phrase matches across it or across the field separator
// (also 0x00).
//
// One-word keywords are one-symbol patterns of that alphabet; for them the
// automaton's walk reduces to the lookup that encodes the word, so they are
// found by that lookup (the vocabulary map) and do not take trie nodes.
//
// Like the other matchers it reports each keyword once per text.
type ahoCorasickMatcher struct {
	dict dictionary
	// words maps each word of a keyword to its entry.
	words map[string]acWord
	width int
	// ac holds the phrases; pattern i is term phrases[i].
	ac      *ahocorasick.Matcher
	phrases []int32
	scratch sync.Pool // *acScratch
}

type acWord struct {
	single int32  // term index of the one-word keyword, -1 if none
	code   uint32 // 1 + the word's code in the automaton's alphabet, 0 if in no phrase
}

type acScratch struct {
	seenSet
	buf []byte
}

// Code space: lead bytes 0x80-0xFF (128 values), continuation bytes
// 0x01-0x7F (127 values); 0x00 stands for every other word.
const (
	acLeads     = 128
	acConts     = 127
	acOtherWord = 0x00
)

// NewAhoCorasickMatcher builds the default Matcher: cloudflare/ahocorasick
// over the phrases written in word codes (see ahoCorasickMatcher), queried
// only through MatchThreadSafe (its Match keeps state in the matcher and is
// not safe for concurrent use). MatchThreadSafe reports each pattern once
// per text however often it occurs, which is the presence semantics all
// matchers share. Keywords are normalized here.
func NewAhoCorasickMatcher(keywords []string) Matcher {
	m := &ahoCorasickMatcher{dict: newDictionary(keywords)}
	terms := m.dict.terms
	if len(terms) == 0 {
		return m
	}
	m.words = make(map[string]acWord, len(terms))
	var nCoded uint32
	var phraseTokens [][]string
	for t, term := range terms {
		if !strings.Contains(term, " ") {
			w, ok := m.words[term]
			if !ok {
				w.single = -1
			}
			w.single = int32(t)
			m.words[term] = w
			continue
		}
		tokens := strings.Split(term, " ")
		for _, tok := range tokens {
			w, ok := m.words[tok]
			if !ok {
				w.single = -1
			}
			if w.code == 0 {
				nCoded++
				w.code = nCoded
			}
			m.words[tok] = w
		}
		m.phrases = append(m.phrases, int32(t))
		phraseTokens = append(phraseTokens, tokens)
	}
	n := len(terms)
	m.scratch.New = func() any { return &acScratch{seenSet: seenSet{stamp: make([]uint32, n)}} }
	if len(m.phrases) == 0 {
		return m
	}
	m.width = 1
	for capacity := uint64(acLeads); uint64(nCoded) > capacity; capacity *= acConts {
		m.width++
	}
	dict := make([][]byte, len(phraseTokens))
	for i, tokens := range phraseTokens {
		p := make([]byte, 0, len(tokens)*m.width)
		for _, tok := range tokens {
			p = m.appendCode(p, m.words[tok].code)
		}
		dict[i] = p
	}
	m.ac = ahocorasick.NewMatcher(dict)
	return m
}

// appendCode appends the code of the word numbered code (from 1).
func (m *ahoCorasickMatcher) appendCode(b []byte, code uint32) []byte {
	k := code - 1
	var digits [4]byte
	for i := m.width - 1; i > 0; i-- {
		digits[i] = byte(1 + k%acConts)
		k /= acConts
	}
	digits[0] = byte(0x80 + k)
	return append(b, digits[:m.width]...)
}

func (m *ahoCorasickMatcher) Match(text string) []int {
	if m.words == nil || text == "" {
		return nil
	}
	sc := m.scratch.Get().(*acScratch)
	defer m.scratch.Put(sc)
	seen := &sc.seenSet
	seen.gen++
	if seen.gen == 0 { // wrapped: old stamps could collide
		clear(seen.stamp)
		seen.gen = 1
	}
	var hits []int
	mark := func(t int32) {
		if seen.stamp[t] != seen.gen {
			seen.stamp[t] = seen.gen
			hits = append(hits, int(t))
		}
	}
	buf := sc.buf[:0]
	coded := 0 // words of the text that are in a phrase
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], ' ')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		w, ok := m.words[text[pos:end]]
		pos = end + 1
		if ok && w.single >= 0 {
			mark(w.single)
		}
		if m.ac == nil {
			continue
		}
		switch {
		case ok && w.code != 0:
			buf = m.appendCode(buf, w.code)
			coded++
		case len(buf) == 0 || buf[len(buf)-1] != acOtherWord:
			buf = append(buf, acOtherWord)
		}
	}
	if coded >= 2 { // every phrase has two words or more
		for _, p := range m.ac.MatchThreadSafe(buf) {
			mark(m.phrases[p])
		}
	}
	sc.buf = buf
	return m.dict.expand(hits)
}
