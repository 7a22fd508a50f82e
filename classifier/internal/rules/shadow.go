package rules

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"sync/atomic"
)

// ShadowEpsilonDefault is the score difference below which the active and
// shadow engines are said to agree on a topic.
const ShadowEpsilonDefault = 1e-9

// Side names which of the two engines of a Shadow answered a document: the
// current one (CLASSIFIER_RULE_MATCHER) or the candidate
// (CLASSIFIER_SHADOW_MATCHER). The other one runs in shadow.
type Side string

// The sides.
const (
	SideCurrent   Side = "current"
	SideCandidate Side = "candidate"
)

// Comparison is one text matched by both engines.
type Comparison struct {
	// Side is the engine whose result was used.
	Side Side
	// Agree reports whether the two results agree (Agree).
	Agree bool
	// Answered is the result used, Other the shadow's.
	Answered, Other []Match
}

// ShadowConfig configures a Shadow.
type ShadowConfig struct {
	// Epsilon is the score difference below which the engines agree on a
	// topic; negative means ShadowEpsilonDefault.
	Epsilon float64
	// RolloutPercent is the share of documents (0..100) the candidate
	// answers, chosen by their identity (RolloutBucket), so a document
	// always goes the same way and raising the share keeps the documents
	// already on the candidate there. 0 (the default) is shadow mode: the
	// current engine answers every document. Texts without an identity
	// (Match, the playground) are answered by the current engine.
	RolloutPercent int
	// OnCompare, if not nil, is called synchronously after every
	// comparison, for the caller to count (per side) and log.
	OnCompare func(Comparison)
}

// Shadow runs two engines on every text (the rule-engine rollout of
// docs/runbook.md): one answers, by the document's identity and the
// rollout share, and the other runs in shadow; the two results are
// compared. Disagreements are counted and every comparison is handed to a
// callback for the caller to log and record; Shadow itself does no I/O. It
// is safe for concurrent use.
type Shadow struct {
	active, shadow *Engine
	cfg            ShadowConfig
	compared       atomic.Uint64
	disagreements  atomic.Uint64
}

// NewShadow pairs the current engine (active) with a candidate (shadow).
// Results agree when they have the same set of topics and each topic's best
// score differs by at most cfg.Epsilon.
func NewShadow(active, shadow *Engine, cfg ShadowConfig) (*Shadow, error) {
	if active == nil || shadow == nil {
		return nil, errors.New("rules: shadow: active and shadow engines are required")
	}
	if math.IsNaN(cfg.Epsilon) || math.IsInf(cfg.Epsilon, 0) {
		return nil, errors.New("rules: shadow: epsilon must be a finite number")
	}
	if cfg.RolloutPercent < 0 || cfg.RolloutPercent > 100 {
		return nil, fmt.Errorf("rules: shadow: rollout percent must be 0..100 (got %d)", cfg.RolloutPercent)
	}
	if cfg.Epsilon < 0 {
		cfg.Epsilon = ShadowEpsilonDefault
	}
	return &Shadow{active: active, shadow: shadow, cfg: cfg}, nil
}

// RolloutBucket is the bucket (0..99) of the document with raw index index
// and id id: FNV-1a of "index\x00id", modulo 100. A rollout of N percent
// sends the buckets below N to the candidate.
func RolloutBucket(index, id string) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(index))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(id))
	return int(h.Sum64() % 100)
}

// SideOf is the engine that answers the document (index, id).
func (s *Shadow) SideOf(index, id string) Side {
	if RolloutBucket(index, id) < s.cfg.RolloutPercent {
		return SideCandidate
	}
	return SideCurrent
}

// Match returns the current engine's result for title and body after
// comparing it with the candidate's: a text without a document identity.
func (s *Shadow) Match(title, body string) []Match {
	a := s.active.Match(title, body)
	s.compare(SideCurrent, a, s.shadow.Match(title, body))
	return a
}

// MatchDoc returns the result for the document (index, id) of the engine
// its rollout bucket picks (SideOf), after comparing it with the other's.
func (s *Shadow) MatchDoc(index, id, title, body string) []Match {
	cur, cand := s.active.Match(title, body), s.shadow.Match(title, body)
	if s.SideOf(index, id) == SideCandidate {
		s.compare(SideCandidate, cand, cur)
		return cand
	}
	s.compare(SideCurrent, cur, cand)
	return cur
}

// ExplainDoc is MatchDoc with the rules that found a keyword without
// matching included (Explain): the matched ones are compared as MatchDoc
// compares them.
func (s *Shadow) ExplainDoc(index, id, title, body string) []Match {
	return s.ExplainDocKeyed(index, id, NewText(title, body))
}

// ExplainDocKeyed is ExplainDoc of a Text, whose keys both engines (and
// other matchers of the same document) share.
func (s *Shadow) ExplainDocKeyed(index, id string, t *Text) []Match {
	cur, cand := s.active.ExplainKeyed(t), s.shadow.ExplainKeyed(t)
	if s.SideOf(index, id) == SideCandidate {
		s.compare(SideCandidate, matchedOnly(cand), matchedOnly(cur))
		return cand
	}
	s.compare(SideCurrent, matchedOnly(cur), matchedOnly(cand))
	return cur
}

// matchedOnly is the matches of an explanation that passed their
// threshold: what Match returns.
func matchedOnly(ms []Match) []Match {
	var out []Match
	for _, m := range ms {
		if m.Matched {
			out = append(out, m)
		}
	}
	return out
}

// MatchText is Match for a single text.
func (s *Shadow) MatchText(text string) []Match {
	a := s.active.MatchText(text)
	s.compare(SideCurrent, a, s.shadow.MatchText(text))
	return a
}

func (s *Shadow) compare(side Side, answered, other []Match) {
	s.compared.Add(1)
	agree := Agree(answered, other, s.cfg.Epsilon)
	if !agree {
		s.disagreements.Add(1)
	}
	if s.cfg.OnCompare != nil {
		s.cfg.OnCompare(Comparison{Side: side, Agree: agree, Answered: answered, Other: other})
	}
}

// Update gives both engines the same rule set, the active one first. It
// returns the errors of both; an engine that fails keeps its rules.
func (s *Shadow) Update(rules []Rule) error {
	return errors.Join(s.active.Update(rules), s.shadow.Update(rules))
}

// RolloutPercent is the share of documents the candidate answers.
func (s *Shadow) RolloutPercent() int { return s.cfg.RolloutPercent }

// ActiveEngine is the current engine: the one whose results Match returns.
func (s *Shadow) ActiveEngine() *Engine { return s.active }

// ShadowEngine is the candidate engine.
func (s *Shadow) ShadowEngine() *Engine { return s.shadow }

// Compared is the number of texts matched by both engines.
func (s *Shadow) Compared() uint64 { return s.compared.Load() }

// Disagreements is the number of texts on which the engines disagreed.
func (s *Shadow) Disagreements() uint64 { return s.disagreements.Load() }

// Agree reports whether two results name the same set of topics with each
// topic's best score within epsilon. Topics, not rule IDs, are compared so
// that a shadow engine may also run a different rule set.
func Agree(a, b []Match, epsilon float64) bool {
	ta, tb := topicScores(a), topicScores(b)
	if len(ta) != len(tb) {
		return false
	}
	for topic, sa := range ta {
		sb, ok := tb[topic]
		if !ok || math.Abs(sa-sb) > epsilon {
			return false
		}
	}
	return true
}

func topicScores(ms []Match) map[string]float64 {
	out := make(map[string]float64, len(ms))
	for _, m := range ms {
		if s, ok := out[m.Rule.Topic]; !ok || m.Score > s {
			out[m.Rule.Topic] = m.Score
		}
	}
	return out
}

// Explain is the active engine's Explain: explanations are not compared.
func (s *Shadow) Explain(title, body string) []Match { return s.active.Explain(title, body) }

// Options are the active engine's options.
func (s *Shadow) Options() Options { return s.active.Options() }
