package rules

import (
	"context"
	"sync"
	"time"
)

// The original design (architecture.md 3.4, package classifier there) named
// its rule engine TrieRuleEngine, built it with NewTrieRuleEngine, reloaded
// it with UpdateRules and returned RuleMatch values. The service runs Engine
// (NewEngine, Update) instead, whose Update reports a refused rule set; the
// names below wrap it for code written against the design's signatures.

// RuleMatch is the original design's name for Match. The design's
// MatchCount (total keyword hits) is Hits here: the distinct keywords found,
// since the matcher reports each keyword once per text (see the package
// documentation).
type RuleMatch = Match

// RuleMatchRecorder records one Match call: how long it took, how many
// rules were evaluated and how many matched. *telemetry.Provider (package
// classifier/internal/telemetry) implements it; the design's
// NewTrieRuleEngine took that type, which this package cannot name (package
// telemetry imports rules), so code that passes a *telemetry.Provider, or
// nil, compiles unchanged.
type RuleMatchRecorder interface {
	RecordRuleMatch(ctx context.Context, duration time.Duration, rulesEvaluated, rulesMatched int)
}

// TrieRuleEngine is the original design's rule engine: an Engine with the
// Aho-Corasick matcher and the other DefaultOptions, whose Match also
// records its figures on the recorder given to NewTrieRuleEngine. Engine's
// methods (RuleCount, KeywordCount, Update, Explain, ...) are its own.
type TrieRuleEngine struct {
	*Engine
	telemetry RuleMatchRecorder

	mu  sync.Mutex
	err error
}

// NewTrieRuleEngine builds an engine over the rules (nil entries are
// skipped) that records each Match on tp, which may be nil. The design's
// signature has no error result: a rule set NewEngine refuses (duplicate
// IDs, a MinConfidence outside 0..1, ...) gives an engine over no rules,
// which matches nothing, and Err reports why.
func NewTrieRuleEngine(rules []*Rule, tp RuleMatchRecorder) *TrieRuleEngine {
	e := &TrieRuleEngine{telemetry: tp}
	e.Engine, e.err = NewEngine(MatcherAhoCorasick, ruleValues(rules))
	if e.err != nil {
		e.Engine, _ = NewEngine(MatcherAhoCorasick, nil) // no rules: always valid
	}
	return e
}

// Match returns the rules matched by title and body, as Engine.Match does,
// and records the call (its duration, RuleCount rules evaluated, the number
// matched) with a background context: the design's Match took none and
// passed a nil one.
func (e *TrieRuleEngine) Match(title, body string) []RuleMatch {
	start := time.Now()
	matches := e.Engine.Match(title, body)
	if e.telemetry != nil {
		e.telemetry.RecordRuleMatch(context.Background(), time.Since(start), e.RuleCount(), len(matches))
	}
	return matches
}

// UpdateRules replaces the rule set without a restart, as Engine.Update
// does: the new automaton is built off to the side and swapped in
// atomically (the design wrote its rules without the lock). A refused rule
// set leaves the current one in use; the design's signature has no error
// result, so Err reports it.
func (e *TrieRuleEngine) UpdateRules(rules []*Rule) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.err = e.Update(ruleValues(rules)) // under mu, so Err is the last update's
}

// Err is why the last NewTrieRuleEngine or UpdateRules refused its rule
// set, nil when it took it.
func (e *TrieRuleEngine) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// ruleValues copies the rules the design passes by pointer.
func ruleValues(rules []*Rule) []Rule {
	out := make([]Rule, 0, len(rules))
	for _, r := range rules {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out
}
