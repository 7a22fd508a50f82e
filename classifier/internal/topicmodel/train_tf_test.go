package topicmodel

import (
	"context"
	"math"
	"slices"
	"testing"
)

// twoTopicModel is a trained-style model over two terms, one per topic,
// counted as tf says.
func twoTopicModel(tf string) *Model {
	return &Model{Kind: "trained", Topics: []string{"sports", "business"}, Terms: []string{"goal", "shares"},
		Body: []float32{1, 0, 0, 1}, Title: []float32{1, 0, 0, 1}, Bias: []float64{0, 0}, Norm: NormL2, TF: tf}
}

func TestTFLogWeighsRepeatedTerms(t *testing.T) {
	t.Parallel()
	body := "goal goal goal shares"
	presence, err := Compile(twoTopicModel(TFPresence), "")
	if err != nil {
		t.Fatal(err)
	}
	if z := presence.Score("", body).Logits; z[0] != z[1] {
		t.Fatalf("presence: logits %v, want a term counted once however often it occurs", z)
	}
	logTF, err := Compile(twoTopicModel(TFLog), "")
	if err != nil {
		t.Fatal(err)
	}
	// goal counts 1+ln 3, shares 1; the norm is over both.
	g := 1 + math.Log(3)
	norm := math.Sqrt(g*g + 1)
	z := logTF.Score("", body).Logits
	if math.Abs(z[0]-g/norm) > 1e-9 || math.Abs(z[1]-1/norm) > 1e-9 {
		t.Fatalf("log tf: logits %v, want [%v %v]", z, g/norm, 1/norm)
	}
	_, contributions := logTF.Explain("", body, 0)
	i := slices.IndexFunc(contributions, func(c Contribution) bool { return c.Term == "goal" })
	if i < 0 || math.Abs(contributions[i].Logit-g/norm) > 1e-9 {
		t.Errorf("explain: %+v, want goal's push to be %v", contributions, g/norm)
	}
	if err := (&Model{Topics: []string{"a"}, Bias: []float64{0}, TF: "sqrt"}).Validate(); err == nil {
		t.Error("an unknown tf validated")
	}
}

// lexiconOver is a hand-written-style model giving each topic's words
// weight w towards topic to[topic].
func lexiconOver(to map[string]string, w float32) *Model {
	m := &Model{Kind: "lexicon", Topics: []string{"business", "science", "sports"}}
	for topic, words := range syntheticTopics {
		for _, word := range words {
			m.Terms = append(m.Terms, word)
			row := make([]float32, len(m.Topics))
			row[slices.Index(m.Topics, to[topic])] = w
			m.Body = append(m.Body, row...)
			m.Title = append(m.Title, row...)
		}
	}
	m.Bias = make([]float64, len(m.Topics))
	return m
}

func TestTrainChoosesTheBaseWeightByCrossValidation(t *testing.T) {
	t.Parallel()
	var train []Example
	for topic, words := range syntheticTopics {
		train = append(train, synthetic(topic, words, 30, 0)...)
	}
	right := map[string]string{"sports": "sports", "business": "business", "science": "science"}
	wrong := map[string]string{"sports": "business", "business": "science", "science": "sports"}
	weight := func(base *Model) float64 {
		var probes [][2]int
		m, err := Train(context.Background(), train, TrainConfig{Seed: 3, Base: base,
			Probed: func(done, total int) { probes = append(probes, [2]int{done, total}) }})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(BaseWeightGrid()) * FoldsDefault; len(probes) != n || probes[n-1] != [2]int{n, n} {
			t.Fatalf("progress %v, want 1..%d of %d", probes, n, n)
		}
		if m.Base != base || !slices.Contains(BaseWeightGrid(), m.BaseWeight) {
			t.Fatalf("base weight %v, want one of %v and the base carried", m.BaseWeight, BaseWeightGrid())
		}
		return m.BaseWeight
	}
	// A base that names the wrong topic for every word is given the least
	// weight; one that is right, more.
	misleading, helpful := weight(lexiconOver(wrong, 3)), weight(lexiconOver(right, 3))
	if misleading != BaseWeightGrid()[0] || helpful <= misleading {
		t.Errorf("base weight: misleading base %v (want %v), helpful base %v (want more)", misleading, BaseWeightGrid()[0], helpful)
	}
	fixed, err := Train(context.Background(), train, TrainConfig{Seed: 3, Base: lexiconOver(right, 3), BaseWeight: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if fixed.BaseWeight != 0.3 {
		t.Errorf("a fixed base weight became %v", fixed.BaseWeight)
	}
}
