package rules

import (
	"errors"
	"math"
	"sync/atomic"
)

// ShadowEpsilonDefault is the score difference below which the active and
// shadow engines are said to agree on a topic.
const ShadowEpsilonDefault = 1e-9

// Shadow runs a second engine beside the active one (the rule-engine
// rollout of docs/runbook.md): every Match is answered by the active engine, also run
// on the shadow engine, and the two results compared. Disagreements are
// counted and handed to a callback for the caller to log and record; Shadow
// itself does no I/O. It is safe for concurrent use.
type Shadow struct {
	active, shadow *Engine
	epsilon        float64
	onDisagree     func(active, shadow []Match)
	compared       atomic.Uint64
	disagreements  atomic.Uint64
}

// NewShadow pairs an active and a shadow engine. Results agree when they
// have the same set of topics and each topic's best score differs by at most
// epsilon (negative means ShadowEpsilonDefault). onDisagree, if not nil, is
// called synchronously with both results on every disagreement.
func NewShadow(active, shadow *Engine, epsilon float64, onDisagree func(active, shadow []Match)) (*Shadow, error) {
	if active == nil || shadow == nil {
		return nil, errors.New("rules: shadow: active and shadow engines are required")
	}
	if math.IsNaN(epsilon) || math.IsInf(epsilon, 0) {
		return nil, errors.New("rules: shadow: epsilon must be a finite number")
	}
	if epsilon < 0 {
		epsilon = ShadowEpsilonDefault
	}
	return &Shadow{active: active, shadow: shadow, epsilon: epsilon, onDisagree: onDisagree}, nil
}

// Match returns the active engine's result for title and body after
// comparing it with the shadow engine's.
func (s *Shadow) Match(title, body string) []Match {
	a := s.active.Match(title, body)
	s.compare(a, s.shadow.Match(title, body))
	return a
}

// MatchText is Match for a single text.
func (s *Shadow) MatchText(text string) []Match {
	a := s.active.MatchText(text)
	s.compare(a, s.shadow.MatchText(text))
	return a
}

func (s *Shadow) compare(a, b []Match) {
	s.compared.Add(1)
	if Agree(a, b, s.epsilon) {
		return
	}
	s.disagreements.Add(1)
	if s.onDisagree != nil {
		s.onDisagree(a, b)
	}
}

// Update gives both engines the same rule set, the active one first. It
// returns the errors of both; an engine that fails keeps its rules.
func (s *Shadow) Update(rules []Rule) error {
	return errors.Join(s.active.Update(rules), s.shadow.Update(rules))
}

// ActiveEngine is the engine whose results Match returns.
func (s *Shadow) ActiveEngine() *Engine { return s.active }

// ShadowEngine is the engine compared against the active one.
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
