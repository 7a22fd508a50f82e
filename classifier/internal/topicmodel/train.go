package topicmodel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/north-cloud/classifier/internal/rules"
)

// Example is one labelled document.
type Example struct {
	Title, Body string
	// Label is the document's topic.
	Label string
}

// Training defaults (TrainConfig).
const (
	MinDocsDefault      = 1
	MaxTermsDefault     = 200_000
	EpochsDefault       = 12
	L2Default           = 1e-3
	LearningRateDefault = 0.4
	FoldsDefault        = 3
)

// TrainConfig configures Train.
type TrainConfig struct {
	// Unstemmed turns stemming off. Stemming is on by default, as in the
	// rule engine.
	Unstemmed bool
	// MinDocs is how many documents a term must occur in to be in the
	// vocabulary. Defaults to MinDocsDefault.
	MinDocs int
	// MaxTerms caps the vocabulary, the terms in most documents kept.
	// Defaults to MaxTermsDefault.
	MaxTerms int
	// Epochs is how many passes training makes. Defaults to EpochsDefault.
	Epochs int
	// L2 is the weight decay. Defaults to L2Default.
	L2 float64
	// LearningRate is Adagrad's step. Defaults to LearningRateDefault.
	LearningRate float64
	// Folds is how many folds the cross-validation that chooses the base's
	// weight and fits the temperature makes (the model is then trained
	// again on all the examples). Defaults to FoldsDefault; 2..10.
	Folds int
	// Seed makes the shuffles repeatable.
	Seed uint64
	// Base, when set, is a model (the shipped lexicon) whose logits are
	// added to the trained model's: training learns what the base does not
	// already say, and the trained model carries the base with it.
	Base *Model
	// BaseWeight, when above zero, fixes the base's weight instead of
	// choosing it by cross-validation (BaseWeightGrid).
	BaseWeight float64
	// Presence counts a term found several times in a field once instead
	// of 1 + ln(times) (Model.TF).
	Presence bool
	// Probed, when set, is told after each model of the cross-validation
	// that chooses the base's weight and the temperature.
	Probed func(done, total int)
	// Progress, when set, is told after each pass of the final training.
	Progress func(epoch, epochs int, loss float64)
}

func (c *TrainConfig) setDefaults() {
	if c.MinDocs == 0 {
		c.MinDocs = MinDocsDefault
	}
	if c.MaxTerms == 0 {
		c.MaxTerms = MaxTermsDefault
	}
	if c.Epochs == 0 {
		c.Epochs = EpochsDefault
	}
	if c.L2 == 0 {
		c.L2 = L2Default
	}
	if c.LearningRate == 0 {
		c.LearningRate = LearningRateDefault
	}
	if c.Folds == 0 {
		c.Folds = FoldsDefault
	}
}

func (c *TrainConfig) validate() error {
	switch {
	case c.MinDocs < 1:
		return fmt.Errorf("train: MinDocs %d: want at least 1", c.MinDocs)
	case c.MaxTerms < 1:
		return fmt.Errorf("train: MaxTerms %d: want at least 1", c.MaxTerms)
	case c.Epochs < 1 || c.Epochs > 1000:
		return fmt.Errorf("train: Epochs %d: want 1..1000", c.Epochs)
	case c.L2 < 0 || c.LearningRate <= 0:
		return fmt.Errorf("train: L2 %v and LearningRate %v: want L2 >= 0 and LearningRate > 0", c.L2, c.LearningRate)
	case c.Folds < 2 || c.Folds > 10:
		return fmt.Errorf("train: Folds %d: want 2..10", c.Folds)
	}
	return nil
}

// ErrTooFewExamples is returned when the examples cannot train a model:
// fewer than two topics, or a topic with fewer than two documents.
var ErrTooFewExamples = errors.New("too few labelled examples")

// Train learns a model from labelled examples: multinomial logistic
// regression on the presence of every one- and two-word term in the title
// and in the body, with the temperature fitted on a held-out share.
func Train(ctx context.Context, examples []Example, cfg TrainConfig) (*Model, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, e := range examples {
		if strings.TrimSpace(e.Label) == "" {
			return nil, errors.New("train: an example has no label")
		}
		counts[e.Label]++
	}
	topics := make([]string, 0, len(counts))
	for t, n := range counts {
		if n < 2 {
			return nil, fmt.Errorf("train: topic %q has %d example: %w", t, n, ErrTooFewExamples)
		}
		topics = append(topics, t)
	}
	if len(topics) < 2 {
		return nil, fmt.Errorf("train: %d topic: %w", len(topics), ErrTooFewExamples)
	}
	slices.Sort(topics)
	m := &Model{Kind: "trained", Topics: topics, Stemming: !cfg.Unstemmed, Norm: NormL2, TF: TFLog, Temperature: 1, Base: cfg.Base}
	if cfg.Presence {
		m.TF = TFPresence
	}
	m.Terms = vocabulary(examples, m, cfg.MinDocs, cfg.MaxTerms)
	m.Body = make([]float32, len(m.Terms)*len(topics))
	m.Title = make([]float32, len(m.Terms)*len(topics))
	m.Bias = make([]float64, len(topics))
	s, err := Compile(m, "")
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	data := make([]trainDoc, len(examples))
	for i, e := range examples {
		data[i] = trainDoc{f: s.Features(e.Title, e.Body), y: slices.Index(topics, e.Label), offset: s.BaseLogits(e.Title, e.Body)}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}

	// Choose the base's weight (where there is a base) and fit the
	// temperature by cross-validation: each weight's probes score the fold
	// each left out; the weight with the fewest errors (then the lowest
	// likelihood) wins, at the temperature that fits its scores best.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x70b1c))
	folds := stratifiedFolds(data, len(topics), cfg.Folds, rng)
	weights := []float64{cfg.BaseWeight}
	if cfg.Base != nil && cfg.BaseWeight == 0 {
		weights = BaseWeightGrid()
	}
	temp, best := 1.0, heldOut{errors: math.MaxInt, nll: math.Inf(1)}
	probed := 0
	for _, w := range weights {
		c := cfg
		c.BaseWeight = w
		var scored []scoredDoc
		for k := range folds {
			var fit []trainDoc
			for j, f := range folds {
				if j != k {
					fit = append(fit, f...)
				}
			}
			probe := newLearner(len(m.Terms), len(topics), c)
			if err := probe.run(ctx, fit, rng, nil); err != nil {
				return nil, err
			}
			scored = probe.score(folds[k], scored)
			if cfg.Probed != nil {
				probed++
				cfg.Probed(probed, len(weights)*len(folds))
			}
		}
		if t, h := fitTemperature(scored); h.better(best) {
			temp, best, cfg.BaseWeight = t, h, w
		}
	}

	final := newLearner(len(m.Terms), len(topics), cfg)
	if err := final.run(ctx, data, rng, cfg.Progress); err != nil {
		return nil, err
	}
	final.export(m)
	m.Temperature = temp
	return m, nil
}

// vocabulary is every one- and two-word keyed term in at least minDocs of
// the examples, the most frequent maxTerms of them, sorted.
func vocabulary(examples []Example, m *Model, minDocs, maxTerms int) []string {
	key := func(s string) string {
		n := rules.Normalize(s)
		if m.Stemming {
			n = rules.StemText(n)
		}
		return n
	}
	df := map[string]int{}
	doc := map[string]bool{}
	for _, e := range examples {
		clear(doc)
		for _, field := range []string{e.Title, e.Body} {
			words := strings.Fields(key(field))
			for i, w := range words {
				doc[w] = true
				if i > 0 {
					doc[words[i-1]+" "+w] = true
				}
			}
		}
		for t := range doc {
			df[t]++
		}
	}
	terms := make([]string, 0, len(df))
	for t, n := range df {
		if n >= minDocs {
			terms = append(terms, t)
		}
	}
	slices.SortFunc(terms, func(a, b string) int { return cmp.Or(cmp.Compare(df[b], df[a]), cmp.Compare(a, b)) })
	if len(terms) > maxTerms {
		terms = terms[:maxTerms]
	}
	slices.Sort(terms)
	return terms
}

type trainDoc struct {
	f      Features
	y      int
	offset []float64 // the base model's logits; nil without one
}

// learner is multinomial logistic regression trained by Adagrad. Feature t
// is term t in the body, nTerms+t term t in the title.
type learner struct {
	cfg    TrainConfig
	c      int
	nTerms int
	w      []float64 // (2*nTerms) x c
	g      []float64 // Adagrad's sums of squared gradients
	b, gb  []float64
	// a scales the base model's logits.
	a float64
}

func newLearner(nTerms, c int, cfg TrainConfig) *learner {
	return &learner{cfg: cfg, c: c, nTerms: nTerms,
		w: make([]float64, 2*nTerms*c), g: make([]float64, 2*nTerms*c),
		b: make([]float64, c), gb: make([]float64, c), a: cfg.BaseWeight}
}

// BaseWeightGrid returns the weights of a base model's logits Train
// chooses from (TrainConfig.BaseWeight): small, as a base's logits (sums of
// hand-set weights) are far larger than a trained model's. The short items
// of a wire feed lean on the lexicon (about 0.2), a long article's own words
// say more (about 0.02).
func BaseWeightGrid() []float64 { return []float64{0.02, 0.05, 0.1, 0.2} }

// features lists a document's feature indices and their values: a term
// found in the title is the term's body feature plus its title feature
// (the title's weight is the body's plus what the title adds), each worth
// what the term counts for (Model.TF) scaled to a unit norm over the terms
// found.
func (l *learner) features(f Features, idx []int, val []float64) ([]int, []float64) {
	idx, val = idx[:0], val[:0]
	norm := sumSquares(f.Body, f.BodyTF) + sumSquares(f.Title, f.TitleTF)
	if norm == 0 {
		return idx, val
	}
	k := 1 / math.Sqrt(norm)
	for i, t := range f.Body {
		idx, val = append(idx, t), append(val, k*tf(f.BodyTF, i))
	}
	for i, t := range f.Title {
		v := k * tf(f.TitleTF, i)
		idx, val = append(idx, t, l.nTerms+t), append(val, v, v)
	}
	return idx, val
}

func (l *learner) logits(idx []int, val []float64, offset []float64, out []float64) []float64 {
	out = append(out[:0], l.b...)
	for j, x := range offset {
		out[j] += l.a * x
	}
	for i, f := range idx {
		row := l.w[f*l.c : (f+1)*l.c]
		for j, x := range row {
			out[j] += val[i] * x
		}
	}
	return out
}

func (l *learner) run(ctx context.Context, data []trainDoc, rng *rand.Rand, progress func(int, int, float64)) error {
	const eps = 1e-8
	var idx []int
	var val, z []float64
	grad := make([]float64, l.c)
	order := make([]int, len(data))
	for i := range order {
		order[i] = i
	}
	for epoch := 1; epoch <= l.cfg.Epochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var loss float64
		for _, i := range order {
			d := data[i]
			idx, val = l.features(d.f, idx, val)
			z = l.logits(idx, val, d.offset, z)
			p := softmax(z, 1)
			loss -= math.Log(max(p[d.y], 1e-12))
			for j := range l.c {
				grad[j] = p[j]
				if j == d.y {
					grad[j]--
				}
				l.gb[j] += grad[j] * grad[j]
				l.b[j] -= l.cfg.LearningRate * grad[j] / (math.Sqrt(l.gb[j]) + eps)
			}
			for i, f := range idx {
				row, acc := l.w[f*l.c:(f+1)*l.c], l.g[f*l.c:(f+1)*l.c]
				for j := range l.c {
					gj := val[i]*grad[j] + l.cfg.L2*row[j]
					acc[j] += gj * gj
					row[j] -= l.cfg.LearningRate * gj / (math.Sqrt(acc[j]) + eps)
				}
			}
		}
		if progress != nil {
			progress(epoch, l.cfg.Epochs, loss/float64(max(1, len(data))))
		}
	}
	return nil
}

// heldOut is how well a probe predicts the held-out documents.
type heldOut struct {
	errors int     // documents whose most probable topic is not their label
	nll    float64 // negative log-likelihood at the fitted temperature
}

// better: fewer errors, then a lower likelihood.
func (h heldOut) better(than heldOut) bool {
	return h.errors < than.errors || h.errors == than.errors && h.nll < than.nll
}

// stratifiedFolds deals the documents, shuffled, into k folds with each
// topic spread evenly.
func stratifiedFolds(data []trainDoc, topics, k int, rng *rand.Rand) [][]trainDoc {
	folds := make([][]trainDoc, k)
	next := make([]int, topics)
	for _, i := range rng.Perm(len(data)) {
		d := data[i]
		folds[next[d.y]%k] = append(folds[next[d.y]%k], d)
		next[d.y]++
	}
	return folds
}

// scoredDoc is a held-out document's logits (before the temperature) and
// its label.
type scoredDoc struct {
	z []float64
	y int
}

// score appends the logits of docs to out.
func (l *learner) score(docs []trainDoc, out []scoredDoc) []scoredDoc {
	var idx []int
	var val []float64
	for _, d := range docs {
		idx, val = l.features(d.f, idx, val)
		out = append(out, scoredDoc{z: l.logits(idx, val, d.offset, nil), y: d.y})
	}
	return out
}

// fitTemperature is the temperature, on a grid, that minimizes the
// negative log-likelihood of the held-out documents, and how well their
// scores predict them (1 and zero when there are none).
func fitTemperature(held []scoredDoc) (float64, heldOut) {
	if len(held) == 0 {
		return 1, heldOut{}
	}
	best, bestNLL := 1.0, math.Inf(1)
	z := make([]float64, len(held[0].z))
	for t := 0.25; t <= 8; t *= 1.05 {
		var nll float64
		for _, d := range held {
			copy(z, d.z)
			nll -= math.Log(max(softmax(z, t)[d.y], 1e-12))
		}
		if nll < bestNLL {
			best, bestNLL = t, nll
		}
	}
	h := heldOut{nll: bestNLL}
	for _, d := range held {
		if slices.Index(d.z, slices.Max(d.z)) != d.y {
			h.errors++
		}
	}
	return math.Round(best*1000) / 1000, h
}

// export writes the learned weights into m.
func (l *learner) export(m *Model) {
	c := l.c
	for t := range l.nTerms {
		for j := range c {
			m.Body[t*c+j] = float32(l.w[t*c+j])
			m.Title[t*c+j] = float32(l.w[t*c+j] + l.w[(l.nTerms+t)*c+j])
		}
	}
	copy(m.Bias, l.b)
	if m.Base != nil {
		m.BaseWeight = l.a
	}
}
