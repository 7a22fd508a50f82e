package topicmodel

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/rules"
)

const testLexicon = `
@title 2
[sports]
3 goal
3 striker
2 match
1 season
[technology]
3 software
3 smartphone
2 game
[business]
3 shares
2 profit
`

func mustLexicon(t *testing.T, src string) *Scorer {
	t.Helper()
	m, err := ParseLexicon(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile(m, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func crimeEngine(t *testing.T) *rules.Engine {
	t.Helper()
	e, err := rules.NewEngine("", []rules.Rule{
		{ID: 1, Name: "Violent", Topic: "violent_crime", Enabled: true, MinKeywords: 2, Priority: 100,
			Keywords: []string{"shot", "attack", "killed", "police", "arrested", "stabbed"}},
		{ID: 2, Name: "Traffic", Topic: "traffic", Enabled: true, MinKeywords: 2, Keywords: []string{"crash", "highway", "lanes"}},
		{ID: 3, Name: "Sports rule", Topic: "sports", Enabled: true, MinKeywords: 2, Keywords: []string{"rugby", "try", "league"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func decide(t *testing.T, s *Scorer, e *rules.Engine, title, body string) Decision {
	t.Helper()
	var sc Scores
	if s != nil {
		sc = s.Score(title, body)
	}
	return Decide(s, sc, e.Explain(title, body), DecideConfig{})
}

func TestParseLexicon(t *testing.T) {
	t.Parallel()
	m, err := ParseLexicon(strings.NewReader(testLexicon))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Topics, []string{"sports", "technology", "business"}) || m.Kind != "lexicon" {
		t.Fatalf("topics %v kind %q", m.Topics, m.Kind)
	}
	i := slices.Index(m.Terms, rules.StemText(rules.Normalize("striker")))
	if i < 0 || m.Body[i*3] != 3 || m.Title[i*3] != 6 || m.Body[i*3+1] != 0 {
		t.Fatalf("striker: index %d body %v title %v", i, m.Body, m.Title)
	}
	for name, src := range map[string]string{
		"keyword before topic": "3 goal\n",
		"no weight":            "[a]\ngoal\n",
		"bad directive":        "@nope 2\n[a]\n1 x\n",
		"empty topic":          "[]\n",
		"no keyword":           "[a]\n1 ...\n",
		"no topics":            "# nothing\n",
	} {
		if _, err := ParseLexicon(strings.NewReader(src)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDefaultLexiconCompiles(t *testing.T) {
	t.Parallel()
	m, err := DefaultLexicon()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sports", "business", "technology", "world", "entertainment"} {
		if !slices.Contains(m.Topics, want) {
			t.Errorf("the default lexicon has no topic %q", want)
		}
	}
	if _, err := Compile(m, rules.MatcherAhoCorasick); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRefusesBrokenModels(t *testing.T) {
	t.Parallel()
	good := func() *Model {
		return &Model{Topics: []string{"a", "b"}, Terms: []string{"x"}, Body: []float32{1, 0}, Title: []float32{0, 1}, Bias: []float64{0, 0}}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, break_ := range map[string]func(m *Model){
		"no topics":     func(m *Model) { m.Topics = nil },
		"repeated":      func(m *Model) { m.Topics = []string{"a", "a"} },
		"short weights": func(m *Model) { m.Body = m.Body[:1] },
		"nan weight":    func(m *Model) { m.Title[0] = float32(math.NaN()) },
		"bias count":    func(m *Model) { m.Bias = []float64{0} },
		"inf bias":      func(m *Model) { m.Bias[0] = math.Inf(1) },
		"temperature":   func(m *Model) { m.Temperature = -1 },
		"norm":          func(m *Model) { m.Norm = "l1" },
	} {
		m := good()
		break_(m)
		if err := m.Validate(); !errors.Is(err, ErrInvalidModel) {
			t.Errorf("%s: Validate = %v, want ErrInvalidModel", name, err)
		}
		if _, err := Compile(m, ""); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// One keyword of a section is enough for a primary topic: a two-line item
// is not left without one because no rule found two keywords.
func TestOneKeywordGivesAPrimary(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	d := decide(t, s, crimeEngine(t), "Late winner", "The striker scored in the last minute.")
	if d.Primary != "sports" || len(d.Topics) != 1 || d.Crime {
		t.Fatalf("decision %+v, want sports alone", d)
	}
	if d.Confidence <= 0.5 || d.Confidence > 1 {
		t.Errorf("confidence %v", d.Confidence)
	}
	if d := decide(t, s, crimeEngine(t), "Soup", "Stir the onions slowly."); d.Primary != "" || len(d.Topics) != 0 {
		t.Errorf("nothing found, decision %+v, want no topic", d)
	}
}

// A title word weighs more than the same word in the body.
func TestTitleOutweighsBody(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	if d := decide(t, s, crimeEngine(t), "Shares", "a smartphone"); d.Primary != "business" {
		t.Errorf("title shares, body smartphone: %+v", d)
	}
	if d := decide(t, s, crimeEngine(t), "Smartphone", "shares"); d.Primary != "technology" {
		t.Errorf("title smartphone, body shares: %+v", d)
	}
}

// Crime words in a sports report (two of them, enough for the crime rule)
// do not flag it when the section's evidence is much larger; the same rule
// flags a report that is about crime.
func TestCrimeNeedsCrimeContext(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	e := crimeEngine(t)
	sport := decide(t, s, e, "Striker inspires late match win",
		"The striker shot past the keeper and the attack kept pressing; a goal in the last minute of the season's match.")
	if sport.Crime || sport.Primary != "sports" {
		t.Errorf("sports report: %+v, want sports and no crime flag", sport)
	}
	crime := decide(t, s, e, "Man stabbed outside stadium",
		"Police said a man was stabbed and another shot after the match; two were arrested after the attack.")
	if !crime.Crime || crime.Subcategory != "violent_crime" {
		t.Errorf("crime report: %+v, want violent_crime", crime)
	}
	if crime.Topics[0].Topic != "sports" && crime.Topics[0].Topic != "violent_crime" {
		t.Errorf("crime report's primary %q", crime.Topics[0].Topic)
	}
}

// A model with a crime topic decides crime as a whole: the crime rules'
// evidence adds to it, it is reported as the subcategory the rules found
// most of, it is never primary while a section has evidence, and beside
// sports, entertainment and technology it needs crime in the headline.
func TestCrimeFamilyTopic(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon+"[entertainment]\n3 film\n2 director\n[crime]\n1.5 arrested\n1.5 charged\n1 police\n1 stabbed\n0.5 shot\n")
	e := crimeEngine(t)
	crime := decide(t, s, e, "Man arrested after stabbing", "Police said the man was charged; another man was stabbed and shot in the attack.")
	if !crime.Crime || crime.Subcategory != "violent_crime" || crime.Primary != "violent_crime" {
		t.Errorf("crime report: %+v, want violent_crime primary", crime)
	}
	for _, x := range crime.Topics {
		if x.Topic == CrimeTopic {
			t.Errorf("the crime family reported as a topic: %+v", crime.Topics)
		}
	}
	review := decide(t, s, e, "Director's new film dazzles", "In the film a detective is shot and the police arrested the wrong man.")
	if review.Crime || review.Primary != "entertainment" {
		t.Errorf("film review: %+v, want entertainment without crime", review)
	}
	star := decide(t, s, e, "Film director arrested and charged with stabbing",
		"Police said the director was arrested and charged; a man was stabbed and shot and police arrested two more.")
	if !star.Crime || star.Primary != "entertainment" {
		t.Errorf("director arrested for a stabbing: %+v, want entertainment primary and a crime flag", star)
	}
	mild := decide(t, s, e, "Film director arrested", "The film director was arrested after a row on the set of his new film.")
	if mild.Crime {
		t.Errorf("a film story with one arrest: %+v, want no crime flag beside entertainment", mild)
	}
}

// A rule-only topic (one the model does not know) is kept when its rule
// passes its threshold; a secondary model topic only above SecondaryMin.
func TestSecondaryTopics(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	d := decide(t, s, crimeEngine(t), "Software maker's shares and profit jump", "The smartphone software maker's profit rose; a highway crash closed lanes.")
	got := map[string]bool{}
	for _, x := range d.Topics {
		got[x.Topic] = true
	}
	if !got["traffic"] || !got["business"] || !got["technology"] {
		t.Errorf("topics %+v, want business, technology and traffic", d.Topics)
	}
	for _, x := range d.Topics[1:] {
		if x.Topic != "traffic" && x.Score < SecondaryMinDefault {
			t.Errorf("secondary %s at %.3f, below %.2f", x.Topic, x.Score, SecondaryMinDefault)
		}
	}
}

// With no model the rules decide as they did alone: every rule that passed
// its threshold, best first.
func TestRulesAloneWithoutModel(t *testing.T) {
	t.Parallel()
	d := decide(t, nil, crimeEngine(t), "Crash", "A highway crash closed two lanes; police said one man was killed.")
	if d.Primary == "" || !d.Crime || len(d.Topics) != 2 {
		t.Errorf("decision %+v, want violent_crime and traffic", d)
	}
	if d := decide(t, nil, crimeEngine(t), "Rugby", "The league"); len(d.Topics) != 1 || d.Primary != "sports" {
		t.Errorf("decision %+v, want sports", d)
	}
	if d := decide(t, nil, crimeEngine(t), "Crash", "on the road"); d.Primary != "" {
		t.Errorf("one keyword below the threshold, no model: %+v, want no topic", d)
	}
}

func TestExplainSumsToTheLogits(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	sc, cs := s.Explain("Smartphone shares", "The game software season", 0)
	sum := make([]float64, len(s.Topics()))
	for _, c := range cs {
		sum[slices.Index(s.Topics(), c.Topic)] += c.Logit
	}
	for i := range sum {
		if math.Abs(sum[i]-sc.Logits[i]) > 1e-9 {
			t.Errorf("topic %s: contributions sum to %v, logit %v", s.Topics()[i], sum[i], sc.Logits[i])
		}
	}
	if sc.Found != 5 {
		t.Errorf("found %d terms, want 5", sc.Found)
	}
}

// synthetic writes n documents of a topic from its own words and shared
// filler, deterministic.
func synthetic(topic string, words []string, n, offset int) []Example {
	filler := []string{"the", "report", "said", "today", "new", "people", "week", "city", "year", "official"}
	out := make([]Example, n)
	for i := range n {
		var b strings.Builder
		for j := range 12 {
			if (i+j)%3 == 0 {
				b.WriteString(words[(i*7+j+offset)%len(words)])
			} else {
				b.WriteString(filler[(i*5+j)%len(filler)])
			}
			b.WriteByte(' ')
		}
		out[i] = Example{Title: words[(i+offset)%len(words)] + " " + filler[i%len(filler)], Body: b.String(), Label: topic}
	}
	return out
}

var syntheticTopics = map[string][]string{
	"sports":   {"goal", "striker", "coach", "league", "referee", "penalty", "tournament", "stadium"},
	"business": {"shares", "profit", "investors", "merger", "revenue", "quarterly", "bank", "market"},
	"science":  {"telescope", "genome", "physicists", "laboratory", "species", "orbit", "molecule", "fossil"},
}

func TestTrainSeparatesTopics(t *testing.T) {
	t.Parallel()
	var train, test []Example
	for topic, words := range syntheticTopics {
		train = append(train, synthetic(topic, words, 60, 0)...)
		test = append(test, synthetic(topic, words, 20, 3)...)
	}
	var epochs []int
	m, err := Train(context.Background(), train, TrainConfig{Seed: 7, Progress: func(e, _ int, _ float64) { epochs = append(epochs, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(epochs) != EpochsDefault || m.Kind != "trained" || m.Norm != NormL2 || m.Temperature <= 0 {
		t.Fatalf("epochs %v, kind %q, norm %q, temperature %v", epochs, m.Kind, m.Norm, m.Temperature)
	}
	if !slices.Contains(m.Terms, "goal") || slices.Contains(m.Terms, "nonexistent") {
		t.Errorf("vocabulary %d terms lacks goal", len(m.Terms))
	}
	s, err := Compile(m, "")
	if err != nil {
		t.Fatal(err)
	}
	right := 0
	for _, e := range test {
		sc := s.Score(e.Title, e.Body)
		best := slices.Index(sc.Probs, slices.Max(sc.Probs))
		if s.Topics()[best] == e.Label {
			right++
		}
	}
	if right < len(test)*95/100 {
		t.Errorf("%d of %d held-out documents right", right, len(test))
	}
	// The same seed trains the same model.
	again, err := Train(context.Background(), train, TrainConfig{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Body, m.Body) || again.Temperature != m.Temperature {
		t.Error("training is not repeatable with one seed")
	}
}

func TestTrainRefusesTooFewExamples(t *testing.T) {
	t.Parallel()
	one := synthetic("sports", syntheticTopics["sports"], 5, 0)
	if _, err := Train(context.Background(), one, TrainConfig{}); !errors.Is(err, ErrTooFewExamples) {
		t.Errorf("one topic: %v", err)
	}
	lonely := append(slices.Clone(one), Example{Title: "shares", Label: "business"})
	if _, err := Train(context.Background(), lonely, TrainConfig{}); !errors.Is(err, ErrTooFewExamples) {
		t.Errorf("a topic of one example: %v", err)
	}
	if _, err := Train(context.Background(), append(slices.Clone(one), Example{Title: "x"}), TrainConfig{}); err == nil {
		t.Error("an unlabelled example: no error")
	}
	if _, err := Train(context.Background(), one, TrainConfig{Epochs: -1}); err == nil {
		t.Error("Epochs -1: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	two := append(slices.Clone(one), synthetic("business", syntheticTopics["business"], 5, 0)...)
	if _, err := Train(ctx, two, TrainConfig{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Probabilities are calibrated on held-out documents: on documents drawn
// like the training ones, a confidence of p is right about p of the time
// (here: the mean confidence is within 0.05 of the accuracy).
func TestConfidenceIsCalibrated(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	var all []string
	for _, words := range syntheticTopics {
		all = append(all, words...)
	}
	draw := func(n int) []Example {
		var out []Example
		for topic, words := range syntheticTopics {
			for range n {
				// Each word is the topic's with probability 0.35, any
				// topic's otherwise: many documents are ambiguous.
				var b []string
				for range 6 {
					if rng.Float64() < 0.35 {
						b = append(b, words[rng.IntN(len(words))])
					} else {
						b = append(b, all[rng.IntN(len(all))])
					}
				}
				out = append(out, Example{Body: strings.Join(b, " "), Label: topic})
			}
		}
		return out
	}
	train, test := draw(400), draw(300)
	m, err := Train(context.Background(), train, TrainConfig{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := Compile(m, "")
	var conf float64
	right := 0
	for _, e := range test {
		sc := s.Score(e.Title, e.Body)
		p := slices.Max(sc.Probs)
		conf += p
		if s.Topics()[slices.Index(sc.Probs, p)] == e.Label {
			right++
		}
	}
	acc, mean := float64(right)/float64(len(test)), conf/float64(len(test))
	t.Logf("accuracy %.3f, mean confidence %.3f, temperature %.3f", acc, mean, m.Temperature)
	if acc < 0.5 || math.Abs(acc-mean) > 0.05 {
		t.Errorf("accuracy %.3f, mean confidence %.3f", acc, mean)
	}
}
