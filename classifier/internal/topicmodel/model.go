package topicmodel

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/north-cloud/classifier/internal/rules"
)

// ErrInvalidModel marks a model that cannot be compiled; the model in use
// stays in use.
var ErrInvalidModel = errors.New("invalid topic model")

// Normalizations a model applies to a document's features.
const (
	// NormNone adds each found term's weight as it is: a hand-written
	// lexicon, where more evidence should mean more confidence.
	NormNone = "none"
	// NormL2 scales the found terms' weights by 1/sqrt(terms found), so a
	// long article and a two-line item are on one scale: trained models.
	NormL2 = "l2"
)

// Term frequency (Model.TF).
const (
	// TFPresence counts a term once however often it occurs.
	TFPresence = "presence"
	// TFLog counts a term found n times in a field as 1 + ln(n): a long
	// article's recurring subject outweighs a passing mention.
	TFLog = "log"
)

// Model is a linear topic model over keyed terms. It is plain data: it is
// stored as JSON (a row of topic_models, or a file) and compiled into a
// Scorer to be used.
type Model struct {
	// Kind says where the model comes from: "lexicon" (written by hand) or
	// "trained" (Train).
	Kind string `json:"kind"`
	// Topics are the model's classes, in the order of every weight row.
	Topics []string `json:"topics"`
	// Terms are the vocabulary, keyed: normalized (rules.Normalize) and, when
	// Stemming, stemmed (rules.StemText). One or more words each.
	Terms []string `json:"terms"`
	// Stemming says whether Terms and documents are stemmed.
	Stemming bool `json:"stemming"`
	// Body[t*len(Topics)+c] is what term t found in the body adds to topic
	// c's logit; Title the same for the title.
	Body  []float32 `json:"body"`
	Title []float32 `json:"title"`
	// Bias is each topic's logit before any term is found.
	Bias []float64 `json:"bias"`
	// Temperature divides the logits before the softmax: fitted on held-out
	// documents so that probabilities are calibrated. 0 reads as 1.
	Temperature float64 `json:"temperature"`
	// Norm is NormNone or NormL2 ("" is NormNone).
	Norm string `json:"norm,omitempty"`
	// TF is how a term found several times in a field counts: TFPresence
	// ("", once) or TFLog (1 + ln of its count). Trained models.
	TF string `json:"tf,omitempty"`
	// Base, when set, is a model whose logits for the topics both models
	// have are added to this one's before the temperature: a model trained
	// on top of the shipped lexicon (TrainConfig.Base) keeps what the
	// lexicon knows where the labels are thin. A base has no base.
	Base *Model `json:"base,omitempty"`
	// BaseWeight scales the base's logits (chosen by Train from BaseWeightGrid).
	BaseWeight float64 `json:"base_weight,omitempty"`
}

// Validate reports what makes m unusable, wrapping ErrInvalidModel.
func (m *Model) Validate() error {
	c := len(m.Topics)
	switch {
	case c == 0:
		return fmt.Errorf("topic model: no topics: %w", ErrInvalidModel)
	case len(m.Bias) != c:
		return fmt.Errorf("topic model: %d biases for %d topics: %w", len(m.Bias), c, ErrInvalidModel)
	case len(m.Body) != len(m.Terms)*c || len(m.Title) != len(m.Terms)*c:
		return fmt.Errorf("topic model: weights are not terms x topics (%d terms, %d topics, %d body, %d title): %w",
			len(m.Terms), c, len(m.Body), len(m.Title), ErrInvalidModel)
	case m.Temperature < 0 || math.IsNaN(m.Temperature) || math.IsInf(m.Temperature, 0):
		return fmt.Errorf("topic model: temperature %v: %w", m.Temperature, ErrInvalidModel)
	case m.Norm != "" && m.Norm != NormNone && m.Norm != NormL2:
		return fmt.Errorf("topic model: norm %q (want %q or %q): %w", m.Norm, NormNone, NormL2, ErrInvalidModel)
	case m.TF != "" && m.TF != TFPresence && m.TF != TFLog:
		return fmt.Errorf("topic model: tf %q (want %q or %q): %w", m.TF, TFPresence, TFLog, ErrInvalidModel)
	}
	if m.Base != nil {
		if m.Base.Base != nil {
			return fmt.Errorf("topic model: a base model with a base of its own: %w", ErrInvalidModel)
		}
		if err := m.Base.Validate(); err != nil {
			return fmt.Errorf("base: %w", err)
		}
	}
	seen := make(map[string]bool, c)
	for _, t := range m.Topics {
		if strings.TrimSpace(t) == "" || seen[t] {
			return fmt.Errorf("topic model: topic %q empty or repeated: %w", t, ErrInvalidModel)
		}
		seen[t] = true
	}
	for _, b := range m.Bias {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return fmt.Errorf("topic model: bias %v: %w", b, ErrInvalidModel)
		}
	}
	for _, w := range [][]float32{m.Body, m.Title} {
		for _, x := range w {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("topic model: weight %v: %w", x, ErrInvalidModel)
			}
		}
	}
	return nil
}

// Scorer is a compiled Model: immutable, safe for concurrent use.
type Scorer struct {
	m       Model
	matcher rules.Matcher
	temp    float64
	// base is the compiled Base; baseTopic[c] is topic c's index in it (-1
	// when the base does not have it).
	base      *Scorer
	baseTopic []int
}

// MatcherDefault is the matcher a model's terms are found with: the token
// index, which finds exactly what the Aho-Corasick automaton finds (the rule
// engine's matchers agree, FuzzMatchersAgree) in a small part of its memory
// for a vocabulary of many phrases: the shipped lexicon's 5,400 terms take
// 1.5 MB in it and 41 MB in the automaton (BenchmarkLexiconMemory), and a
// trained model's vocabulary is mostly two-word phrases.
const MatcherDefault = rules.MatcherTokenIndex

// Compile builds m's matcher (of the kind given; "" is MatcherDefault) over
// its terms.
func Compile(m *Model, kind rules.MatcherKind) (*Scorer, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if kind == "" {
		kind = MatcherDefault
	}
	k, err := rules.ParseMatcherKind(string(kind))
	if err != nil {
		return nil, fmt.Errorf("topic model: %w", err)
	}
	if m.TF == TFLog {
		k = rules.MatcherTokenIndex // the matcher that counts (rules.TermCounter)
	}
	matcher, err := rules.NewMatcher(k, m.Terms)
	if err != nil {
		return nil, fmt.Errorf("topic model: %w", err)
	}
	s := &Scorer{m: *m, matcher: matcher, temp: m.Temperature}
	if s.temp == 0 {
		s.temp = 1
	}
	if m.Base != nil {
		if s.base, err = Compile(m.Base, k); err != nil {
			return nil, err
		}
		s.baseTopic = make([]int, len(m.Topics))
		for i, t := range m.Topics {
			s.baseTopic[i] = slices.Index(m.Base.Topics, t)
		}
	}
	return s, nil
}

// EvidenceScale is what one unit of the rules' evidence (a weight of the
// hand-written lexicon's scale) is worth in this model's logits: 1 for a
// lexicon, the chosen BaseWeight for a model trained on one, and
// UnbasedEvidenceScale for a model trained without a base.
func (s *Scorer) EvidenceScale() float64 {
	switch {
	case s.m.Kind == "lexicon":
		return 1
	case s.base != nil:
		return s.m.BaseWeight
	}
	return UnbasedEvidenceScale
}

// UnbasedEvidenceScale is EvidenceScale for a trained model without a base:
// within the range Train chooses BaseWeight from (BaseWeightGrid).
const UnbasedEvidenceScale = 0.15

// Topics are the model's topics, in the order of Scores.Probs.
func (s *Scorer) Topics() []string { return s.m.Topics }

// Model is the scorer's model: read it, do not modify it.
func (s *Scorer) Model() *Model { return &s.m }

// Key returns text keyed as the model's terms are.
func (s *Scorer) Key(text string) string {
	n := rules.Normalize(text)
	if s.m.Stemming {
		n = rules.StemText(n)
	}
	return n
}

// Features are the model's terms found in one document.
type Features struct {
	Title, Body []int
	// TitleTF[i] and BodyTF[i] are what term Title[i] and Body[i] count
	// for under the model's TF; nil: 1 each.
	TitleTF, BodyTF []float64
}

// tf is what the i-th term of a field counts for.
func tf(vals []float64, i int) float64 {
	if vals == nil {
		return 1
	}
	return vals[i]
}

// Found is how many terms were found in the title and body together.
func (f Features) Found() int { return len(f.Title) + len(f.Body) }

// Features finds the model's terms in a document's title and body: one
// matcher pass over each.
func (s *Scorer) Features(title, body string) Features {
	return s.FeaturesKeyed(rules.NewText(title, body))
}

// FeaturesKeyed is Features of a Text, whose keys other matchers of the
// same document share.
func (s *Scorer) FeaturesKeyed(t *rules.Text) Features {
	var f Features
	title, body := t.Keys(s.m.Stemming)
	f.Title, f.TitleTF = s.match(title)
	f.Body, f.BodyTF = s.match(body)
	return f
}

// match finds the model's terms in keyed text and, under TFLog, what each
// counts for.
func (s *Scorer) match(keyed string) ([]int, []float64) {
	if keyed == "" {
		return nil, nil
	}
	c, ok := s.matcher.(rules.TermCounter)
	if s.m.TF != TFLog || !ok {
		return s.matcher.Match(keyed), nil
	}
	terms, counts := c.MatchCounts(keyed)
	vals := make([]float64, len(counts))
	for i, n := range counts {
		vals[i] = 1 + math.Log(float64(n))
	}
	return terms, vals
}

// Scores are a document's topic probabilities.
type Scores struct {
	// Probs[c] is the probability of topic c (Scorer.Topics); they sum to 1.
	Probs []float64
	// Logits are the scores before the temperature and the softmax.
	Logits []float64
	// TitleLogits are what the terms found in the title added to Logits.
	TitleLogits []float64
	// Found is how many of the model's terms were found (title and body
	// counted apart); zero means the model saw nothing to go on.
	Found int
}

// Score returns the topic probabilities of a document.
func (s *Scorer) Score(title, body string) Scores {
	return s.ScoreKeyed(rules.NewText(title, body))
}

// ScoreKeyed is Score of a Text, whose keys other matchers of the same
// document (the rules, the base model) share.
func (s *Scorer) ScoreKeyed(t *rules.Text) Scores {
	return s.withBase(s.scores(s.FeaturesKeyed(t)), t)
}

func (s *Scorer) scores(f Features) Scores {
	z, title := s.logits(f)
	return Scores{Logits: z, TitleLogits: title, Probs: softmax(slices.Clone(z), s.temp), Found: f.Found()}
}

// withBase adds the base model's logits of a document to sc (its own
// scores), for the topics the base has.
func (s *Scorer) withBase(sc Scores, t *rules.Text) Scores {
	if s.base == nil {
		return sc
	}
	b := s.base.ScoreKeyed(t)
	k := s.m.BaseWeight
	for i, j := range s.baseTopic {
		if j >= 0 {
			sc.Logits[i] += k * b.Logits[j]
			sc.TitleLogits[i] += k * b.TitleLogits[j]
		}
	}
	sc.Found += b.Found
	sc.Probs = softmax(slices.Clone(sc.Logits), s.temp)
	return sc
}

// BaseLogits are the base model's logits of a document for this model's
// topics (0 where the base lacks one), before BaseWeight; nil without a
// base.
func (s *Scorer) BaseLogits(title, body string) []float64 {
	if s.base == nil {
		return nil
	}
	b := s.base.Score(title, body)
	out := make([]float64, len(s.baseTopic))
	for i, j := range s.baseTopic {
		if j >= 0 {
			out[i] = b.Logits[j]
		}
	}
	return out
}

// scale is the factor a document's weights are multiplied by under the
// model's normalization.
func (s *Scorer) scale(f Features) float64 {
	if s.m.Norm != NormL2 || f.Found() == 0 {
		return 1
	}
	return 1 / math.Sqrt(sumSquares(f.Title, f.TitleTF)+sumSquares(f.Body, f.BodyTF))
}

// sumSquares is the sum of the squares of what a field's terms count for.
func sumSquares(terms []int, tfs []float64) float64 {
	if tfs == nil {
		return float64(len(terms))
	}
	var sum float64
	for _, x := range tfs {
		sum += x * x
	}
	return sum
}

// logits returns a document's logits and the part of them its title's
// terms added.
func (s *Scorer) logits(f Features) (out, title []float64) {
	c := len(s.m.Topics)
	out = slices.Clone(s.m.Bias)
	title = make([]float64, c)
	k := s.scale(f)
	for i, t := range f.Body {
		v := k * tf(f.BodyTF, i)
		for j, w := range s.m.Body[t*c : (t+1)*c] {
			out[j] += v * float64(w)
		}
	}
	for i, t := range f.Title {
		v := k * tf(f.TitleTF, i)
		for j, w := range s.m.Title[t*c : (t+1)*c] {
			out[j] += v * float64(w)
			title[j] += v * float64(w)
		}
	}
	return out, title
}

// softmax turns z into probabilities at a temperature, in place.
func softmax(z []float64, temp float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range z {
		z[i] = math.Exp((v - mx) / temp)
		sum += z[i]
	}
	for i := range z {
		z[i] /= sum
	}
	return z
}

// Contribution is one term's push on one topic in one field.
type Contribution struct {
	Term  string  `json:"term"`
	Field string  `json:"field"` // "title" or "body"
	Topic string  `json:"topic"`
	Logit float64 `json:"logit"` // what it added to the topic's logit
}

// Explain returns a document's scores and the contributions of the terms
// found, largest first (by absolute value), at most limit of them per topic
// (0: all).
func (s *Scorer) Explain(title, body string, limit int) (Scores, []Contribution) {
	f := s.Features(title, body)
	c := len(s.m.Topics)
	k := s.scale(f)
	perTopic := make([][]Contribution, c)
	add := func(terms []int, tfs []float64, w []float32, field string) {
		for i, t := range terms {
			for j := range c {
				if x := k * tf(tfs, i) * float64(w[t*c+j]); x != 0 {
					perTopic[j] = append(perTopic[j], Contribution{Term: s.m.Terms[t], Field: field, Topic: s.m.Topics[j], Logit: x})
				}
			}
		}
	}
	add(f.Title, f.TitleTF, s.m.Title, "title")
	add(f.Body, f.BodyTF, s.m.Body, "body")
	var out []Contribution
	for _, cs := range perTopic {
		slices.SortFunc(cs, func(a, b Contribution) int {
			return cmp.Or(cmp.Compare(math.Abs(b.Logit), math.Abs(a.Logit)), cmp.Compare(a.Term, b.Term))
		})
		if limit > 0 && len(cs) > limit {
			cs = cs[:limit]
		}
		out = append(out, cs...)
	}
	if s.base != nil {
		_, bc := s.base.Explain(title, body, limit)
		for _, c := range bc {
			if slices.Contains(s.m.Topics, c.Topic) {
				c.Field = "lexicon " + c.Field
				c.Logit *= s.m.BaseWeight
				out = append(out, c)
			}
		}
	}
	return s.withBase(s.scores(f), rules.NewText(title, body)), out
}
