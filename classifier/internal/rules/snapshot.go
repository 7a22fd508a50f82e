package rules

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
)

// snapshot is one immutable build of a rule set.
type snapshot struct {
	version uint64
	scoring Scoring
	rules   []compiledRule
	terms   []string // distinct normalized keywords; the matcher's keywords
	// postings[postingStart[t]:postingStart[t+1]] are the rules holding term t.
	postings     []int32
	postingStart []int32
	matcher      Matcher
	scratch      sync.Pool // *matchScratch
}

type compiledRule struct {
	rule     Rule
	terms    []int32  // the rule's distinct keywords as term indices, rule order
	keywords []string // their spelling in the rule
	// needed is the fewest distinct keywords that pass the threshold
	// (len(terms)+1 when none do); byCount is true when that threshold is
	// MinKeywords rather than MinConfidence.
	needed  int
	byCount bool
}

// matchScratch is the per-call working memory of snapshot.match, pooled.
type matchScratch struct {
	counts  []int32 // per rule: distinct keywords found
	touched []int32 // rules with counts > 0
	gen     uint32
	stamp   []uint32 // per term: == gen when found in this call
}

func compile(opts Options, rules []Rule, version uint64) (*snapshot, error) {
	s, err := compileRules(opts, rules, version)
	if err != nil {
		return nil, err
	}
	if err := s.buildMatcher(opts.Matcher); err != nil {
		return nil, err
	}
	return s, nil
}

// compileRules validates rules and builds a snapshot without its matcher.
func compileRules(opts Options, rules []Rule, version uint64) (*snapshot, error) {
	s := &snapshot{version: version, scoring: opts.Scoring}
	termIndex := make(map[string]int32)
	ids := make(map[int64]bool, len(rules))
	var termRules [][]int32
	for i := range rules {
		r := &rules[i]
		if !r.Enabled {
			continue
		}
		if ids[r.ID] {
			return nil, fmt.Errorf("rules: rule %d %q: duplicate rule id: %w", r.ID, r.Name, ErrInvalidRule)
		}
		ids[r.ID] = true
		if math.IsNaN(r.MinConfidence) || r.MinConfidence < 0 || r.MinConfidence > 1 {
			return nil, fmt.Errorf("rules: rule %d %q: min_confidence %v outside 0..1: %w",
				r.ID, r.Name, r.MinConfidence, ErrInvalidRule)
		}
		if r.MinKeywords < 0 {
			return nil, fmt.Errorf("rules: rule %d %q: min_keywords %d is negative: %w",
				r.ID, r.Name, r.MinKeywords, ErrInvalidRule)
		}
		effect, err := ParseEffect(string(r.Effect))
		if err != nil {
			return nil, fmt.Errorf("rules: rule %d %q: %w: %w", r.ID, r.Name, err, ErrInvalidRule)
		}
		c := compiledRule{rule: *r}
		c.rule.Effect = effect // "" reads as support: the snapshot spells it out
		c.rule.Keywords = slices.Clone(r.Keywords)
		ruleIndex := int32(len(s.rules))
		for _, kw := range r.Keywords {
			n := Normalize(kw)
			if opts.Stemming {
				n = StemText(n)
			}
			if n == "" {
				continue
			}
			t, ok := termIndex[n]
			if !ok {
				t = int32(len(s.terms))
				termIndex[n] = t
				s.terms = append(s.terms, n)
				termRules = append(termRules, nil)
			}
			if rs := termRules[t]; len(rs) > 0 && rs[len(rs)-1] == ruleIndex {
				continue // the rule lists this keyword twice
			}
			c.terms = append(c.terms, t)
			c.keywords = append(c.keywords, kw)
			termRules[t] = append(termRules[t], ruleIndex)
		}
		if len(c.terms) == 0 {
			continue // nothing to match; not counted
		}
		c.needed, c.byCount = threshold(opts.Scoring, &c.rule, len(c.terms))
		s.rules = append(s.rules, c)
	}
	s.postingStart = make([]int32, len(s.terms)+1)
	for t, rs := range termRules {
		s.postingStart[t+1] = s.postingStart[t] + int32(len(rs))
	}
	s.postings = make([]int32, 0, s.postingStart[len(s.terms)])
	for _, rs := range termRules {
		s.postings = append(s.postings, rs...)
	}
	s.initScratch()
	return s, nil
}

// buildMatcher builds the snapshot's matcher over its keywords.
func (s *snapshot) buildMatcher(kind MatcherKind) error {
	m, err := NewMatcher(kind, s.terms)
	if err != nil {
		return err
	}
	s.matcher = m
	return nil
}

func (s *snapshot) initScratch() {
	nRules, nTerms := len(s.rules), len(s.terms)
	s.scratch.New = func() any {
		return &matchScratch{counts: make([]int32, nRules), stamp: make([]uint32, nTerms)}
	}
}

// interim is the snapshot with a token index over its keywords in place of
// its matcher: the same results, for the time a new automaton is built.
func (s *snapshot) interim() *snapshot {
	t := &snapshot{version: s.version, scoring: s.scoring, rules: s.rules, terms: s.terms,
		postings: s.postings, postingStart: s.postingStart, matcher: NewTokenIndexMatcher(s.terms)}
	t.initScratch()
	return t
}

// threshold returns the fewest distinct keywords of a rule with n distinct
// keywords that pass its threshold under scoring (n+1 when none do), and
// whether the threshold is the rule's MinKeywords.
func threshold(scoring Scoring, r *Rule, n int) (needed int, byCount bool) {
	if r.Threshold(scoring) == ThresholdMinKeywords {
		return min(r.MinKeywords, n+1), true
	}
	for h := 1; h <= n; h++ {
		if score, _ := Score(h, n); score >= r.MinConfidence {
			return h, false
		}
	}
	return n + 1, false
}

// match scores the rules whose keywords occur in text (keyed). It returns
// the rules that pass their threshold, or with all set every rule that found
// a keyword, Matched telling them apart.
func (s *snapshot) match(text string, all bool) []Match {
	if len(s.terms) == 0 || text == "" {
		return nil
	}
	found := s.matcher.Match(text)
	if len(found) == 0 {
		return nil
	}
	sc := s.scratch.Get().(*matchScratch)
	defer s.scratch.Put(sc)
	sc.gen++
	if sc.gen == 0 {
		clear(sc.stamp)
		sc.gen = 1
	}
	sc.touched = sc.touched[:0]
	for _, t := range found {
		sc.stamp[t] = sc.gen
		for _, r := range s.postings[s.postingStart[t]:s.postingStart[t+1]] {
			if sc.counts[r] == 0 {
				sc.touched = append(sc.touched, r)
			}
			sc.counts[r]++
		}
	}
	var out []Match
	for _, r := range sc.touched {
		n := int(sc.counts[r])
		sc.counts[r] = 0
		c := &s.rules[r]
		score, coverage := Score(n, len(c.terms))
		// The score threshold is compared as the spec writes it (not through
		// needed), so that floating point decides exactly as before.
		passed := score >= c.rule.MinConfidence
		if c.byCount {
			passed = n >= c.needed
		}
		if !passed && !all {
			continue
		}
		kws := make([]string, 0, n)
		for i, t := range c.terms {
			if sc.stamp[t] == sc.gen {
				kws = append(kws, c.keywords[i])
			}
		}
		out = append(out, Match{
			Rule: &c.rule, Score: score, Coverage: coverage,
			Hits: n, UniqueMatches: n, MatchedKeywords: kws,
			Keywords: len(c.terms), Needed: c.needed, ByMinKeywords: c.byCount, Matched: passed,
		})
	}
	slices.SortFunc(out, func(a, b Match) int {
		return cmp.Or(
			cmp.Compare(b.Rule.Priority, a.Rule.Priority),
			cmp.Compare(b.Score, a.Score),
			cmp.Compare(a.Rule.ID, b.Rule.ID), // unique among enabled rules
		)
	})
	return out
}
