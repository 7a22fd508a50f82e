package topicmodel

import (
	"cmp"
	"slices"

	"github.com/north-cloud/classifier/internal/rules"
)

// Decision defaults (DecideConfig).
const (
	// SecondaryMinDefault is the probability a topic other than the
	// primary needs to be kept.
	SecondaryMinDefault = 0.35
	// RuleWeightDefault is what each distinct keyword a rule finds adds to
	// its topic's logit (twice that in the title) when the topic is one of
	// the model's.
	RuleWeightDefault = 0.5
	// CrimeShareDefault is the share of the evidence a crime topic needs
	// against the primary section's to be kept beside it.
	CrimeShareDefault = 0.5
)

// DecideConfig tunes Decide. The zero value takes every default.
type DecideConfig struct {
	// SecondaryMin is the probability a topic of the model other than the
	// primary needs to be kept. Defaults to SecondaryMinDefault.
	SecondaryMin float64
	// RuleWeight is what each distinct keyword a rule finds adds to the
	// logit of its topic when that topic is one of the model's; a negative
	// value turns the rules' evidence off. Defaults to RuleWeightDefault.
	RuleWeight float64
	// CrimeShare is how large a crime rule's evidence must be against the
	// primary section's evidence for the crime topic to be kept beside a
	// section that is not crime. Defaults to CrimeShareDefault.
	CrimeShare float64
}

func (c DecideConfig) withDefaults() DecideConfig {
	if c.SecondaryMin == 0 {
		c.SecondaryMin = SecondaryMinDefault
	}
	if c.RuleWeight == 0 {
		c.RuleWeight = RuleWeightDefault
	}
	if c.RuleWeight < 0 {
		c.RuleWeight = 0
	}
	if c.CrimeShare == 0 {
		c.CrimeShare = CrimeShareDefault
	}
	return c
}

// TopicScore is a kept topic and its probability.
type TopicScore struct {
	Topic string
	Score float64
}

// Decision is what a classified document carries about its topics.
type Decision struct {
	// Primary is the document's section: "" when nothing was found.
	Primary string
	// Confidence is the primary topic's probability (0..1).
	Confidence float64
	// Topics are the kept topics, the primary first, with their
	// probabilities (a crime or other rule-only topic: its rule's score).
	Topics []TopicScore
	// Crime is set when a crime subcategory is kept; Subcategory is the
	// first kept one.
	Crime       bool
	Subcategory string
	// Reasons say, in words, why each topic was kept or dropped.
	Reasons []string
}

// Decide decides a document's topics from the model's view of it (nil
// scorer: no model) and the rules' explanation of it (rules.Engine.Explain:
// every rule that found a keyword, Matched telling which passed).
//
// The primary topic is the model's most probable topic once the rules'
// keywords are added as evidence; another topic of the model is kept when its
// probability reaches SecondaryMin. A topic the model does not know (a crime
// subcategory, or an operator's own topic) is kept when its rule passed its
// threshold, and a crime topic beside a primary section that is not crime
// only when its rule's evidence is at least CrimeShare of the section's.
// With no model, or a model that found nothing, the rules decide: the
// topic whose rules found the most keywords is primary.
func Decide(s *Scorer, sc Scores, explained []rules.Match, cfg DecideConfig) Decision {
	cfg = cfg.withDefaults()
	var d Decision
	modelTopic := map[string]int{}
	if s != nil {
		for i, t := range s.m.Topics {
			modelTopic[t] = i
		}
	}
	// Each topic's rule evidence: distinct keywords found by its rules.
	evidence := map[string]float64{}
	passed := map[string]rules.Match{}
	for _, m := range explained {
		t := m.Topic()
		evidence[t] += float64(m.UniqueMatches)
		if m.Matched {
			if _, ok := passed[t]; !ok {
				passed[t] = m
			}
		}
	}
	if s != nil && (sc.Found > 0 || anyIn(evidence, modelTopic)) {
		logits := slices.Clone(sc.Logits)
		for t, e := range evidence {
			if i, ok := modelTopic[t]; ok && !rules.IsCrimeSubcategory(t) {
				logits[i] += cfg.RuleWeight * e
			}
		}
		probs := softmax(logits, s.temp)
		best := 0
		for i, p := range probs {
			if p > probs[best] {
				best = i
			}
		}
		d.Primary, d.Confidence = s.m.Topics[best], probs[best]
		d.Topics = append(d.Topics, TopicScore{Topic: d.Primary, Score: probs[best]})
		for i, p := range probs {
			if i != best && p >= cfg.SecondaryMin {
				d.Topics = append(d.Topics, TopicScore{Topic: s.m.Topics[i], Score: p})
			}
		}
		slices.SortStableFunc(d.Topics[1:], func(a, b TopicScore) int { return cmp.Compare(b.Score, a.Score) })
	}
	// Topics only the rules know, best rule first (priority, then score:
	// the engine's order).
	var ruleOnly []rules.Match
	for _, m := range explained {
		t := m.Topic()
		if _, ok := modelTopic[t]; ok || !m.Matched || passed[t].Rule != m.Rule {
			continue
		}
		ruleOnly = append(ruleOnly, m)
	}
	if d.Primary == "" {
		// No model view: the rules decide.
		d.Primary, d.Confidence = rulePrimary(explained, evidence)
		if d.Primary == "" {
			return d
		}
		d.Topics = append(d.Topics, TopicScore{Topic: d.Primary, Score: d.Confidence})
	}
	sectionEvidence := evidence[d.Primary]
	for _, m := range ruleOnly {
		t := m.Topic()
		if slices.ContainsFunc(d.Topics, func(x TopicScore) bool { return x.Topic == t }) {
			continue
		}
		if rules.IsCrimeSubcategory(t) && !rules.IsCrimeSubcategory(d.Primary) && s != nil && sc.Found > 0 {
			// Beside a section, crime needs evidence of its own that is
			// not small against the section's.
			section := sectionEvidence + float64(sc.Found)*d.Confidence
			if evidence[t] < cfg.CrimeShare*section {
				d.Reasons = append(d.Reasons, t+": dropped, crime evidence small beside "+d.Primary)
				continue
			}
		}
		d.Topics = append(d.Topics, TopicScore{Topic: t, Score: m.Score})
	}
	for _, t := range d.Topics {
		if rules.IsCrimeSubcategory(t.Topic) {
			d.Crime = true
			if d.Subcategory == "" {
				d.Subcategory = t.Topic
			}
		}
	}
	return d
}

// rulePrimary is, among the rules that passed their threshold, the topic
// whose rules found the most distinct keywords (then the highest priority,
// then the best score), with that rule's score: the decision when no model
// has a view, as the rules alone decided before there was a model.
func rulePrimary(explained []rules.Match, evidence map[string]float64) (string, float64) {
	var best *rules.Match
	for i := range explained {
		m := &explained[i]
		if m.Matched && (best == nil || better(m, best, evidence)) {
			best = m
		}
	}
	if best == nil {
		return "", 0
	}
	return best.Topic(), best.Score
}

func better(a, b *rules.Match, evidence map[string]float64) bool {
	return cmp.Or(
		cmp.Compare(evidence[a.Topic()], evidence[b.Topic()]),
		cmp.Compare(a.Rule.Priority, b.Rule.Priority),
		cmp.Compare(a.Score, b.Score),
	) > 0
}

func anyIn(evidence map[string]float64, topics map[string]int) bool {
	for t := range evidence {
		if _, ok := topics[t]; ok {
			return true
		}
	}
	return false
}
