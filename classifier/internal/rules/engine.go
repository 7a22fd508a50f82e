package rules

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrInvalidRule marks a rule set the engine refuses to build; the previous
// snapshot stays in use.
var ErrInvalidRule = errors.New("invalid rule")

// Rule is a topic and the keywords (words or phrases) that indicate it.
type Rule struct {
	ID       int64
	Name     string
	Topic    string
	Keywords []string
	// MinConfidence is the lowest score (0..1) at which the rule matches.
	MinConfidence float64
	// Priority orders matches: higher first.
	Priority int
	// Enabled rules only are matched; disabled ones are left out of the
	// snapshot entirely.
	Enabled bool
	// MinKeywords, when above zero and the engine scores with
	// ScoringMinKeywords (the default), replaces the MinConfidence
	// threshold: the rule matches when it finds at least that many distinct
	// keywords, however long its keyword list. Zero keeps the spec's
	// threshold (score >= MinConfidence). See the package documentation.
	MinKeywords int
	// Effect is what the rule does to its topic when it passes its
	// threshold: support it (EffectSupport, also ""), veto it
	// (EffectExclude) or make it the primary topic whatever the model says
	// (EffectOverride). The engine matches every effect alike; the topic
	// decision (package topicmodel) applies it.
	Effect Effect
}

// Effect is what a passing rule does to its topic in the topic decision.
type Effect string

// The effects a rule can have (Rule.Effect).
const (
	// EffectSupport adds the rule's keywords as evidence for its topic and,
	// with no model, lets the first passing rule decide: the rules' only
	// effect before effects existed, and the default.
	EffectSupport Effect = "support"
	// EffectExclude vetoes the rule's topic for a document it passes on:
	// the topic is not kept, not primary and cannot flag the document as
	// crime related; its keywords are never evidence for the topic. The
	// topic CrimeFamily vetoes every crime subcategory.
	EffectExclude Effect = "exclude"
	// EffectOverride keeps the rule's topic and makes it the primary topic,
	// with the rule's score as its confidence, whatever the model says;
	// an exclude rule that passes on the same document still wins.
	EffectOverride Effect = "override"
)

// Effects are the valid effects, the default first.
var Effects = []Effect{EffectSupport, EffectExclude, EffectOverride}

// CrimeFamily is the topic an exclude rule names to veto crime as a whole:
// every crime subcategory (IsCrimeSubcategory) and a model's crime topic.
const CrimeFamily = "crime"

// ParseEffect returns the Effect named s, EffectSupport for "".
func ParseEffect(s string) (Effect, error) {
	switch e := Effect(s); e {
	case "":
		return EffectSupport, nil
	case EffectSupport, EffectExclude, EffectOverride:
		return e, nil
	}
	return "", fmt.Errorf("rules: unknown effect %q (want %q, %q or %q)", s, EffectSupport, EffectExclude, EffectOverride)
}

// Vetoes reports whether an exclude rule of topic excludeTopic vetoes
// topic: its own topic, and with CrimeFamily every crime subcategory and
// the family itself.
func Vetoes(excludeTopic, topic string) bool {
	return excludeTopic == topic || excludeTopic == CrimeFamily && IsCrimeSubcategory(topic)
}

// crimeSubcategories are the topics that make a document crime related.
var crimeSubcategories = map[string]bool{
	"violent_crime":    true,
	"property_crime":   true,
	"drug_crime":       true,
	"organized_crime":  true,
	"criminal_justice": true,
}

// IsCrimeSubcategory reports whether topic is a crime subcategory
// (violent_crime, property_crime, drug_crime, organized_crime,
// criminal_justice): a match sets is_crime_related and crime_subcategory.
func IsCrimeSubcategory(topic string) bool { return crimeSubcategories[topic] }

// The thresholds a rule can be decided by (Rule.Threshold).
const (
	ThresholdMinKeywords   = "min_keywords"
	ThresholdMinConfidence = "min_confidence"
)

// Threshold names the one threshold that decides r under scoring: its
// MinKeywords (ThresholdMinKeywords) when it is above zero and scoring is
// ScoringMinKeywords, otherwise its MinConfidence (ThresholdMinConfidence).
// The other field is then not consulted. The engine, the rule API and the
// playground all decide with this.
func (r *Rule) Threshold(scoring Scoring) string {
	if scoring == ScoringMinKeywords && r.MinKeywords > 0 {
		return ThresholdMinKeywords
	}
	return ThresholdMinConfidence
}

// Match is a rule found in a text, with the figures of its score.
type Match struct {
	// Rule is the engine snapshot's own copy of the rule: read it, do not
	// modify it.
	Rule *Rule
	// Score is 0.5*min(1, log1p(Hits)/2.5) + 0.5*Coverage.
	Score float64
	// Coverage is UniqueMatches over the rule's distinct non-empty keywords.
	Coverage float64
	// Hits is what the score's log term counts: the distinct keywords of the
	// rule found in the text (presence, not term frequency; see the package
	// documentation). It equals UniqueMatches.
	Hits int
	// UniqueMatches is the number of distinct keywords of the rule found.
	UniqueMatches int
	// MatchedKeywords are the matched keywords as the rule spells them, in
	// the rule's order. With stemming, keywords of one rule that share a
	// stem ("murder", "murdered") are one keyword, spelled as the first.
	MatchedKeywords []string
	// Keywords is the number of distinct keywords of the rule (after
	// normalization, and stemming when on): coverage's denominator.
	Keywords int
	// Needed is how many distinct keywords the rule must find to match under
	// the engine's scoring: MinKeywords, or the fewest whose score reaches
	// MinConfidence. It is Keywords+1 when no number of keywords suffices.
	Needed int
	// ByMinKeywords reports that the threshold is the rule's MinKeywords
	// (ScoringMinKeywords and MinKeywords > 0), not its MinConfidence.
	ByMinKeywords bool
	// Matched reports whether the rule passed its threshold. Match returns
	// matched rules only; Explain returns every rule that found a keyword.
	Matched bool
}

// Topic is the matched rule's topic.
func (m Match) Topic() string { return m.Rule.Topic }

// Score returns the spec's score for a rule with keywords distinct keywords
// of which hits were found in a text. It is exported so callers and tests can
// explain a score.
func Score(hits, keywords int) (score, coverage float64) {
	if hits <= 0 || keywords <= 0 {
		return 0, 0
	}
	coverage = float64(hits) / float64(keywords)
	logTF := math.Min(1, math.Log1p(float64(hits))/2.5)
	return 0.5*logTF + 0.5*coverage, coverage
}

// Scoring selects the threshold a rule must pass to match. The score itself
// is always the spec's formula (Score).
type Scoring string

const (
	// ScoringSpec is the spec's threshold: a rule matches when its score is
	// at least MinConfidence. MinKeywords is ignored.
	ScoringSpec Scoring = "spec"
	// ScoringMinKeywords lets a rule with MinKeywords > 0 match when it finds
	// that many distinct keywords, whatever the length of its keyword list
	// (coverage no longer dilutes long lists); rules with MinKeywords 0 keep
	// the spec's threshold. The default.
	ScoringMinKeywords Scoring = "min_keywords"

	// ScoringDefault is the scoring used when configuration names none.
	ScoringDefault = ScoringMinKeywords
	// StemmingDefault is whether NewEngine stems keywords and text: on, as
	// the evaluation (docs/classification.md) showed it raises recall without
	// costing precision.
	StemmingDefault = true
)

// ParseScoring returns the Scoring named s, ScoringDefault for "".
func ParseScoring(s string) (Scoring, error) {
	switch sc := Scoring(strings.TrimSpace(s)); sc {
	case "":
		return ScoringDefault, nil
	case ScoringSpec, ScoringMinKeywords:
		return sc, nil
	}
	return "", fmt.Errorf("rules: unknown scoring %q (want %q or %q)", s, ScoringSpec, ScoringMinKeywords)
}

// Options configure an Engine.
type Options struct {
	// Matcher is the matcher kind ("" is MatcherKindDefault).
	Matcher MatcherKind
	// Stemming reduces every token of keywords and text to its English
	// Snowball stem (Stem) before matching, so "acquire" matches "acquires",
	// "acquired" and "acquiring". Matching stays whole-word: tokens are
	// compared whole, after stemming.
	Stemming bool
	// Scoring is the threshold rule ("" is ScoringDefault).
	Scoring Scoring
}

// DefaultOptions are the options NewEngine uses besides the matcher kind.
func DefaultOptions() Options {
	return Options{Matcher: MatcherKindDefault, Stemming: StemmingDefault, Scoring: ScoringDefault}
}

// Engine matches texts against a rule set. It holds an immutable snapshot
// (rules, keyword postings and matcher) behind an atomic pointer: Match is
// lock-free and safe for concurrent use, and Update builds a new snapshot off
// to the side and swaps it in, while Match calls already running finish on
// the old one (with Aho-Corasick, on a token index standing in for the old
// automaton: see Update).
type Engine struct {
	opts     Options
	snap     atomic.Pointer[snapshot]
	updateMu sync.Mutex // serializes Update, so the last call wins
}

// NewEngine builds an engine over rules with the matcher kind given ("" is
// MatcherKindDefault) and the other DefaultOptions. It fails on an unknown
// kind and on rule sets wrapping ErrInvalidRule: duplicate IDs,
// MinConfidence outside 0..1, a negative MinKeywords or an unknown Effect among
// enabled rules.
func NewEngine(kind MatcherKind, rules []Rule) (*Engine, error) {
	opts := DefaultOptions()
	opts.Matcher = kind
	return NewEngineWithOptions(opts, rules)
}

// NewEngineWithOptions builds an engine over rules with opts. The zero
// Options are the default matcher and scoring without stemming.
func NewEngineWithOptions(opts Options, rules []Rule) (*Engine, error) {
	kind, err := ParseMatcherKind(string(opts.Matcher))
	if err != nil {
		return nil, err
	}
	scoring, err := ParseScoring(string(opts.Scoring))
	if err != nil {
		return nil, err
	}
	opts.Matcher, opts.Scoring = kind, scoring
	e := &Engine{opts: opts}
	s, err := compile(opts, rules, 1)
	if err != nil {
		return nil, err
	}
	e.snap.Store(s)
	return e, nil
}

// Update replaces the rule set. The new snapshot is built without blocking
// Match; on error the current snapshot stays in use.
//
// With the Aho-Corasick matcher, the automaton being the bulk of an engine's
// memory, Update does not keep the old automaton alive while it builds the
// new one: once the new rule set is validated, Match is served by a token
// index over the current keywords (same results: the matchers agree; built
// in milliseconds and a few MB) until the new snapshot is in, so a reload's
// peak is about one automaton, not two (BenchmarkReload).
func (e *Engine) Update(rules []Rule) error {
	e.updateMu.Lock()
	defer e.updateMu.Unlock()
	cur := e.snap.Load()
	s, err := compileRules(e.opts, rules, cur.version+1)
	if err != nil {
		return err
	}
	if e.opts.Matcher == MatcherAhoCorasick && cur.matcher != nil {
		e.snap.Store(cur.interim())
		cur = nil
		// Collect the old automaton now (once the Match calls on it have
		// returned), before the new one is allocated in one piece; left to
		// the pacer, the collection may come only after that allocation.
		runtime.GC()
	}
	if err := s.buildMatcher(e.opts.Matcher); err != nil {
		return err // the kind was valid at NewEngine: not reached
	}
	e.snap.Store(s)
	return nil
}

// Kind is the engine's matcher kind.
func (e *Engine) Kind() MatcherKind { return e.opts.Matcher }

// Options are the engine's options, defaults filled in.
func (e *Engine) Options() Options { return e.opts }

// Key returns text as the engine compares it: normalized, and stemmed when
// the engine stems. Two keywords with the same Key are the same keyword to
// the engine.
func (e *Engine) Key(text string) string {
	n := Normalize(text)
	if e.opts.Stemming {
		n = StemText(n)
	}
	return n
}

// MatchKeyed is Match of a Text, whose keys other matchers of the same
// document share.
func (e *Engine) MatchKeyed(t *Text) []Match {
	return e.snap.Load().match(e.documentOf(t), false)
}

// ExplainKeyed is Explain of a Text, whose keys other matchers of the same
// document share.
func (e *Engine) ExplainKeyed(t *Text) []Match {
	return e.snap.Load().match(e.documentOf(t), true)
}

// RuleCount is the number of rules in use: enabled rules with at least one
// non-empty keyword.
func (e *Engine) RuleCount() int { return len(e.snap.Load().rules) }

// KeywordCount is the number of distinct normalized keywords the matcher
// holds across all rules in use.
func (e *Engine) KeywordCount() int { return len(e.snap.Load().terms) }

// RuleInfo is a rule in use with its threshold as the engine applies it.
type RuleInfo struct {
	Rule
	// Distinct is the number of distinct keywords (after normalization, and
	// stemming when on); Needed how many of them the rule must find to match
	// (Distinct+1 when no number suffices); ByMinKeywords whether that is the
	// rule's MinKeywords rather than its MinConfidence.
	Distinct, Needed int
	ByMinKeywords    bool
}

// Rules returns the rules in use (enabled, with a usable keyword), in the
// order they were given.
func (e *Engine) Rules() []RuleInfo {
	s := e.snap.Load()
	out := make([]RuleInfo, len(s.rules))
	for i := range s.rules {
		c := &s.rules[i]
		out[i] = RuleInfo{Rule: c.rule, Distinct: len(c.terms), Needed: c.needed, ByMinKeywords: c.byCount}
		out[i].Keywords = slices.Clone(c.rule.Keywords)
	}
	return out
}

// Version counts the snapshots: 1 after NewEngine, plus one per successful
// Update.
func (e *Engine) Version() uint64 { return e.snap.Load().version }

// Match matches a document's title and body. No phrase matches across the
// two. The result is sorted by priority, then score (both descending), then
// rule ID; it is nil when nothing matches.
func (e *Engine) Match(title, body string) []Match {
	return e.snap.Load().match(e.document(title, body), false)
}

// MatchText matches a single text, sorted as Match.
func (e *Engine) MatchText(text string) []Match {
	return e.snap.Load().match(e.Key(text), false)
}

// Explain is Match for the rules that found at least one keyword, whether
// they passed their threshold or not (Matched says which), so a caller can
// show why a rule did not match and how many keywords it lacked. Sorted as
// Match.
func (e *Engine) Explain(title, body string) []Match {
	return e.snap.Load().match(e.document(title, body), true)
}

// document is the engine's text for a title and body: both keyed, joined by
// the field separator.
func (e *Engine) document(title, body string) string {
	return e.documentOf(NewText(title, body))
}

// documentOf is document of a Text.
func (e *Engine) documentOf(text *Text) string {
	t, b := text.Keys(e.opts.Stemming)
	switch {
	case t == "":
		return b
	case b == "":
		return t
	}
	return t + " " + fieldSeparator + " " + b
}
