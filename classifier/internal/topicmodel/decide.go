package topicmodel

import (
	"cmp"
	"math"
	"slices"

	"github.com/north-cloud/classifier/internal/rules"
)

// Decision defaults (DecideConfig).
const (
	// SecondaryMinDefault is the probability a topic of the model other
	// than the primary needs to be kept.
	SecondaryMinDefault = 0.35
	// RuleWeightDefault is what each distinct keyword a rule finds adds to
	// its topic's logit when the topic is one of the model's.
	RuleWeightDefault = 0.25
	// CrimeWeightDefault is the logit each distinct keyword of a crime
	// topic adds, once one of its rules passed its threshold.
	CrimeWeightDefault = 1.5
	// CrimeMinDefault is the probability a crime topic needs to be kept.
	CrimeMinDefault = 0.5
	// SectionFloorDefault is the probability at which a section stays the
	// primary topic beside a more probable crime topic: any section the
	// model found evidence of.
	SectionFloorDefault = 1e-9
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
	// CrimeWeight is the logit each distinct keyword of a crime topic adds
	// once a rule of that topic passed its threshold: crime competes with
	// the sections in one softmax. Defaults to CrimeWeightDefault.
	CrimeWeight float64
	// CrimeMin is the probability a crime topic needs to be kept. Defaults
	// to CrimeMinDefault.
	CrimeMin float64
	// SectionFloor: a crime topic is the primary topic only when no topic
	// of the model reaches this probability; otherwise the best section is
	// primary and crime is kept beside it. Defaults to SectionFloorDefault.
	SectionFloor float64
	// CrimeBeside raises CrimeMin beside the sections whose reports borrow
	// crime's words (a striker's shot, a game's heist, a hacker in a
	// review): beside primary topic t a crime topic needs CrimeBeside[t],
	// and, with a model that has a crime topic, crime words in the title.
	// Nil takes CrimeBesideDefault; an empty map turns it off.
	CrimeBeside map[string]float64
}

// CrimeBesideDefault is DecideConfig.CrimeBeside's default: beside sports,
// entertainment, technology and science, crime needs to be almost certain.
func CrimeBesideDefault() map[string]float64 {
	return map[string]float64{"sports": 0.9, "entertainment": 0.9, "technology": 0.9, "science": 0.9}
}

func (c DecideConfig) withDefaults() DecideConfig {
	if c.SecondaryMin == 0 {
		c.SecondaryMin = SecondaryMinDefault
	}
	if c.RuleWeight == 0 {
		c.RuleWeight = RuleWeightDefault
	}
	c.RuleWeight = max(c.RuleWeight, 0)
	if c.CrimeWeight == 0 {
		c.CrimeWeight = CrimeWeightDefault
	}
	if c.CrimeMin == 0 {
		c.CrimeMin = CrimeMinDefault
	}
	if c.SectionFloor == 0 {
		c.SectionFloor = SectionFloorDefault
	}
	if c.CrimeBeside == nil {
		c.CrimeBeside = CrimeBesideDefault()
	}
	return c
}

// TopicScore is a kept topic and its probability.
type TopicScore struct {
	Topic string  `json:"topic"`
	Score float64 `json:"score"`
}

// Decision is what a classified document carries about its topics.
type Decision struct {
	// Primary is the document's section: "" when nothing was found.
	Primary string `json:"primary_topic"`
	// Confidence is the primary topic's probability (0..1).
	Confidence float64 `json:"confidence"`
	// Topics are the kept topics, the primary first, with their
	// probabilities (a topic only the rules know: its rule's score).
	Topics []TopicScore `json:"topics"`
	// Crime is set when a crime subcategory is kept; Subcategory is the
	// first kept one.
	Crime       bool   `json:"is_crime_related"`
	Subcategory string `json:"crime_subcategory,omitempty"`
	// Disputed is set when a rule that passed its threshold names a topic
	// of the model that the decision did not keep: the rules and the model
	// disagree, so an operator's label is worth most here.
	Disputed bool `json:"disputed"`
}

// Explanation says why a document got its decision: what the model alone
// said, which of its terms pushed which topic and by how much, and what the
// rules found and did.
type Explanation struct {
	Decision Decision `json:"decision"`
	// Model is the deciding model's own view (before the rules' evidence):
	// its kind and each topic's probability; nil when the rules decided
	// alone.
	Model *ModelView `json:"model,omitempty"`
	// Contributions are the terms found, the largest pushes first, at most
	// a few per topic.
	Contributions []Contribution `json:"contributions"`
	// Rules are the rules that found a keyword, whether they passed their
	// threshold (matched), their effect and what they found.
	Rules []RuleView `json:"rules"`
	// Vetoed are the topics exclude rules vetoed in the document, each once
	// with the first rule (engine order) that vetoed it: none of them is
	// kept. The topic crime stands for every crime subcategory.
	Vetoed []Veto `json:"vetoed"`
	// OverriddenBy names the override rule whose topic is the primary topic
	// whatever the model said; empty when no override rule passed.
	OverriddenBy string `json:"overridden_by,omitempty"`
}

// ModelView is a model's probabilities for one document.
type ModelView struct {
	Kind   string       `json:"kind"`
	Topics []TopicScore `json:"topics"`
}

// RuleView is one rule's view of a document.
type RuleView struct {
	Rule     string       `json:"rule"`
	Topic    string       `json:"topic"`
	Effect   rules.Effect `json:"effect"`
	Matched  bool         `json:"matched"`
	Keywords []string     `json:"keywords_found"`
}

// Veto is a topic an exclude rule vetoed in a document.
type Veto struct {
	Topic    string `json:"topic"`
	VetoedBy string `json:"vetoed_by"`
}

// ExplainContributionsPerTopic bounds Explanation.Contributions per topic.
const ExplainContributionsPerTopic = 5

// Explain decides a document as Decide does and says why.
func Explain(s *Scorer, title, body string, explained []rules.Match, cfg DecideConfig) Explanation {
	var e Explanation
	var sc Scores
	if s != nil {
		sc, e.Contributions = s.Explain(title, body, ExplainContributionsPerTopic)
		e.Model = &ModelView{Kind: s.m.Kind}
		for i, t := range s.m.Topics {
			e.Model.Topics = append(e.Model.Topics, TopicScore{Topic: t, Score: sc.Probs[i]})
		}
		slices.SortStableFunc(e.Model.Topics, func(a, b TopicScore) int { return cmp.Compare(b.Score, a.Score) })
	}
	if e.Contributions == nil {
		e.Contributions = []Contribution{}
	}
	e.Decision = Decide(s, sc, explained, cfg)
	e.Rules = []RuleView{}
	for _, m := range explained {
		e.Rules = append(e.Rules, RuleView{Rule: m.Rule.Name, Topic: m.Topic(), Effect: effectOf(&m), Matched: m.Matched, Keywords: m.MatchedKeywords})
	}
	r := readEffects(explained)
	e.Vetoed = r.vetoList()
	if r.override != nil {
		e.OverriddenBy = r.override.Rule.Name
	}
	return e
}

// Decide decides a document's topics from the model's view of it (nil
// scorer: no model) and the rules' explanation of it (rules.Engine.Explain:
// every rule that found a keyword, Matched telling which passed).
//
// With a model: each topic of the model gets its logit plus RuleWeight per
// distinct keyword its rules found; each crime subcategory one of whose
// rules passed its threshold competes beside them with CrimeWeight per
// distinct keyword its rules found. One softmax (at the model's temperature)
// turns them into probabilities. The primary topic is the most probable;
// another topic of the model is kept at SecondaryMin, a crime topic at
// CrimeMin. So crime words in a sports report, where the section's evidence
// is far larger, do not flag it; a report that is about crime is flagged.
// A topic neither the model (nor its base) nor crime covers (an operator's
// own topic) is kept when its rule passed its threshold. Nothing found: no
// topic.
//
// With no model, or a model that found nothing, the rules decide as they
// did alone: every rule that passed its threshold, in the engine's order.
//
// Rules' effects (rules.Effect) apply to both: the keywords of support and
// override rules are evidence, those of exclude rules never are. A topic an
// exclude rule passed on is vetoed: dropped from the softmax (its
// probability goes to the rest, so the primary is the best topic left) and
// from what the rules decide; the topic crime vetoes every crime
// subcategory and the model's crime topic. When every topic with evidence
// is vetoed, the model has no view left and the rules decide. The first
// passing override rule (the engine's order: priority, then score) whose
// topic is not vetoed makes its topic the primary with its score as the
// confidence; the primary the model or the rules gave stays beside it when
// it reaches SecondaryMin (CrimeMin for a crime subcategory).
func Decide(s *Scorer, sc Scores, explained []rules.Match, cfg DecideConfig) Decision {
	cfg = cfg.withDefaults()
	r := readEffects(explained)
	var d Decision
	// decided are the topics the model weighed, kept or not: the rules do
	// not keep them again as topics only the rules know.
	decided := map[string]bool{}
	byModel := false
	if s != nil && (sc.Found > 0 || anyIn(r.evidence, s.m.Topics)) {
		d, decided, byModel = decideWithModel(s, sc, explained, &r, cfg)
	}
	if !byModel {
		d, decided = Decision{}, map[string]bool{}
		if m := r.rulePrimary(explained); m != nil {
			d.Primary, d.Confidence = m.Topic(), m.Score
			d.Topics = append(d.Topics, TopicScore{Topic: d.Primary, Score: m.Score})
		}
	}
	if r.override != nil {
		d = withOverride(d, r.override, cfg)
	}
	if byModel {
		d.Disputed = disputed(s, &r, d.Topics)
	}
	if d.Primary == "" {
		return d
	}
	// Topics only the rules know: kept when a rule passed, best rule first.
	for i := range explained {
		m := &explained[i]
		t := m.Topic()
		if !m.Matched || decided[t] || r.passed[t] != m || hasTopic(d.Topics, t) {
			continue
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

// decideWithModel is Decide's decision by the model's probabilities and
// the rules' evidence, and the topics it weighed. It reports false when the
// vetoes left no topic with evidence of its own: the rules decide then.
func decideWithModel(s *Scorer, sc Scores, explained []rules.Match, r *ruleEffects, cfg DecideConfig) (Decision, map[string]bool, bool) {
	decided := map[string]bool{}
	topics := slices.Clone(s.m.Topics)
	z := slices.Clone(sc.Logits)
	unit := s.EvidenceScale()
	// A model topic named crime is the crime family: the crime rules'
	// evidence adds to it, and it is reported as the subcategory the crime
	// rules found most of.
	crimeAt := slices.Index(topics, CrimeTopic)
	for i, t := range topics {
		decided[t] = true
		if i != crimeAt {
			z[i] += unit * cfg.RuleWeight * r.evidence[t]
		}
	}
	// With a crime family the crime rules' evidence counts once, at its
	// largest: a keyword many crime rules list is one keyword.
	crimeRules := 0.0
	for _, t := range crimeCandidates(explained, r.passed, decided) {
		if crimeAt >= 0 {
			crimeRules = max(crimeRules, unit*cfg.CrimeWeight*r.evidence[t])
			continue
		}
		topics = append(topics, t)
		z = append(z, unit*cfg.CrimeWeight*r.evidence[t])
	}
	vetoedFamily := false
	if crimeAt >= 0 {
		z[crimeAt] += crimeRules
		vetoedFamily = r.vetoed(CrimeTopic)
		topics[crimeAt] = crimeSubcategory(explained, r)
	}
	// Vetoed topics leave the softmax: their probability goes to the rest.
	anyVetoed := false
	for i, t := range topics {
		if r.vetoed(t) || i == crimeAt && vetoedFamily {
			z[i], anyVetoed = math.Inf(-1), true
		}
	}
	live := func(i int) bool { return !math.IsInf(z[i], -1) }
	isSection := func(i int) bool { return i < len(s.m.Topics) && i != crimeAt && live(i) }
	// found is whether topic i has evidence of its own (more than its
	// bias): only such a section stays primary beside crime.
	found := func(i int) bool { return live(i) && (i >= len(s.m.Topics) || z[i] > s.m.Bias[i]) }
	best, section, anyFound := -1, -1, false
	for i := range z {
		if best < 0 && live(i) {
			best = i
		}
		anyFound = anyFound || found(i)
	}
	if anyVetoed && !anyFound {
		return Decision{}, nil, false
	}
	for i := range z {
		if z[i] > z[best] {
			best = i
		}
		if isSection(i) && (section < 0 || z[i] > z[section]) {
			section = i
		}
	}
	// Compared as logits: a section's probability can underflow to 0.
	if section >= 0 && best != section && found(section) && (z[section]-z[best])/s.temp >= math.Log(cfg.SectionFloor) {
		best = section
	}
	p := softmax(z, s.temp)
	var d Decision
	d.Primary, d.Confidence = topics[best], p[best]
	d.Topics = append(d.Topics, TopicScore{Topic: d.Primary, Score: p[best]})
	var rest []TopicScore
	crimeMin := cfg.CrimeMin
	if v, ok := cfg.CrimeBeside[d.Primary]; ok {
		crimeMin = max(crimeMin, v)
		if crimeAt >= 0 && sc.TitleLogits != nil && sc.TitleLogits[crimeAt] <= 0 {
			crimeMin = 2 // a headline that is not about crime: not crime
		}
	}
	for i, t := range topics {
		min := cfg.SecondaryMin
		if !isSection(i) {
			min = crimeMin
		}
		if i != best && live(i) && p[i] >= min {
			rest = append(rest, TopicScore{Topic: t, Score: p[i]})
		}
	}
	slices.SortStableFunc(rest, func(a, b TopicScore) int { return cmp.Compare(b.Score, a.Score) })
	d.Topics = append(d.Topics, rest...)
	for _, t := range topics {
		decided[t] = true // decided above, kept or not
	}
	if crimeAt >= 0 {
		for t := range r.passed {
			if rules.IsCrimeSubcategory(t) {
				decided[t] = true // crime was decided as a whole
			}
		}
	}
	if s.base != nil {
		// The sections of the base that the trained model left out were
		// left out on purpose (the operator's labels name the sections):
		// their rules do not bring them back.
		for _, t := range s.base.m.Topics {
			if !rules.IsCrimeSubcategory(t) && t != CrimeTopic {
				decided[t] = true
			}
		}
	}
	return d, decided, true
}

// disputed reports whether a rule that passed its threshold names a topic
// of the model (not a crime subcategory, not vetoed) that topics lack.
func disputed(s *Scorer, r *ruleEffects, topics []TopicScore) bool {
	for t := range r.passed {
		if slices.Contains(s.m.Topics, t) && !rules.IsCrimeSubcategory(t) && !hasTopic(topics, t) {
			return true
		}
	}
	return false
}

// withOverride makes the override rule m's topic d's primary topic, with
// m's score as its confidence. d's own primary stays beside it when it
// reaches SecondaryMin (CrimeMin for a crime subcategory); d's other topics
// stay as they were kept.
func withOverride(d Decision, m *rules.Match, cfg DecideConfig) Decision {
	t := m.Topic()
	out := Decision{Primary: t, Confidence: m.Score, Topics: []TopicScore{{Topic: t, Score: m.Score}}}
	for i, x := range d.Topics {
		if x.Topic == t {
			continue
		}
		if i == 0 {
			min := cfg.SecondaryMin
			if rules.IsCrimeSubcategory(x.Topic) {
				min = cfg.CrimeMin
			}
			if x.Score < min {
				continue
			}
		}
		out.Topics = append(out.Topics, x)
	}
	return out
}

// ruleEffects is the rules' explanation of a document with each rule's
// effect applied.
type ruleEffects struct {
	// evidence is the distinct keywords the support and override rules of
	// each topic not vetoed found.
	evidence map[string]float64
	// passed is, per topic not vetoed, the first support or override rule
	// of it that passed its threshold (the engine's order: best first).
	passed map[string]*rules.Match
	// vetoes are the exclude rules that passed, in the engine's order.
	vetoes []*rules.Match
	// override is the first override rule that passed whose topic is not
	// vetoed, nil when there is none.
	override *rules.Match
}

// readEffects applies the rules' effects to their explanation of a
// document.
func readEffects(explained []rules.Match) ruleEffects {
	r := ruleEffects{evidence: map[string]float64{}, passed: map[string]*rules.Match{}}
	for i := range explained {
		if m := &explained[i]; m.Matched && effectOf(m) == rules.EffectExclude {
			r.vetoes = append(r.vetoes, m)
		}
	}
	for i := range explained {
		m := &explained[i]
		t := m.Topic()
		if effectOf(m) == rules.EffectExclude || r.vetoed(t) {
			continue // an exclude rule's keywords are never evidence for its topic
		}
		r.evidence[t] += float64(m.UniqueMatches)
		if m.Matched && r.passed[t] == nil {
			r.passed[t] = m
		}
		if m.Matched && r.override == nil && effectOf(m) == rules.EffectOverride {
			r.override = m
		}
	}
	return r
}

// vetoed reports whether a passing exclude rule vetoes topic.
func (r *ruleEffects) vetoed(topic string) bool {
	return slices.ContainsFunc(r.vetoes, func(m *rules.Match) bool { return rules.Vetoes(m.Topic(), topic) })
}

// vetoList is each vetoed topic once, with the first rule that vetoed it.
func (r *ruleEffects) vetoList() []Veto {
	out := []Veto{}
	for _, m := range r.vetoes {
		if !slices.ContainsFunc(out, func(v Veto) bool { return v.Topic == m.Topic() }) {
			out = append(out, Veto{Topic: m.Topic(), VetoedBy: m.Rule.Name})
		}
	}
	return out
}

// rulePrimary is the first support or override rule that passed its
// threshold in the engine's order (priority, then score) on a topic not
// vetoed: the decision when no model has a view, as the rules alone decided
// before there was a model.
func (r *ruleEffects) rulePrimary(explained []rules.Match) *rules.Match {
	for i := range explained {
		if m := &explained[i]; r.passed[m.Topic()] == m {
			return m
		}
	}
	return nil
}

// effectOf is m's rule's effect; anything but exclude and override (a rule
// built without one) supports its topic.
func effectOf(m *rules.Match) rules.Effect {
	switch e := m.Rule.Effect; e {
	case rules.EffectExclude, rules.EffectOverride:
		return e
	}
	return rules.EffectSupport
}

func hasTopic(topics []TopicScore, t string) bool {
	return slices.ContainsFunc(topics, func(x TopicScore) bool { return x.Topic == t })
}

// CrimeTopic is the model topic that stands for crime as a whole (a
// lexicon's [crime] section): it is decided like a section but reported as
// the crime subcategory the crime rules found most keywords of
// (DefaultCrimeSubcategory when they found none), and it is never the
// primary topic while a section reaches SectionFloor.
const CrimeTopic = "crime"

// DefaultCrimeSubcategory is the crime topic of a document the model calls
// crime when no crime rule found a keyword in it.
const DefaultCrimeSubcategory = "criminal_justice"

// crimeSubcategory is the crime subcategory not vetoed whose support and
// override rules found the most distinct keywords (the engine's order
// breaks ties: priority, score), DefaultCrimeSubcategory when there is
// none.
func crimeSubcategory(explained []rules.Match, r *ruleEffects) string {
	best := ""
	for i := range explained {
		m := &explained[i]
		t := m.Topic()
		if rules.IsCrimeSubcategory(t) && effectOf(m) != rules.EffectExclude && !r.vetoed(t) && (best == "" || r.evidence[t] > r.evidence[best]) {
			best = t
		}
	}
	if best == "" {
		return DefaultCrimeSubcategory
	}
	return best
}

// crimeCandidates are the crime subcategories the model does not know one
// of whose rules passed its threshold, in the engine's order.
func crimeCandidates(explained []rules.Match, passed map[string]*rules.Match, model map[string]bool) []string {
	var out []string
	for i := range explained {
		t := explained[i].Topic()
		if rules.IsCrimeSubcategory(t) && !model[t] && passed[t] == &explained[i] {
			out = append(out, t)
		}
	}
	return out
}

func anyIn(evidence map[string]float64, topics []string) bool {
	for _, t := range topics {
		if evidence[t] > 0 {
			return true
		}
	}
	return false
}
