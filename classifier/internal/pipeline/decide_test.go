package pipeline

import (
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/contentindex"
)

func lexicon(t *testing.T, src string) *topicmodel.Scorer {
	t.Helper()
	m, err := topicmodel.ParseLexicon(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	s, err := topicmodel.Compile(m, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The classified document carries the decision: the primary topic first,
// its confidence, and the crime fields only when crime was kept.
func TestClassifyCarriesTheDecision(t *testing.T) {
	t.Parallel()
	engine, err := rules.NewEngine("", []rules.Rule{
		{ID: 1, Topic: "violent_crime", Keywords: []string{"shot", "attack", "police"}, MinKeywords: 2, Priority: 100, Enabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	sports := lexicon(t, "[sports]\n3 striker\n3 goal\n2 match\n[business]\n3 shares\n")
	c, err := New(Config{Topics: engine, Model: func(string, string) (*topicmodel.Scorer, *topicmodel.Scorer) { return sports, nil }})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := c.Classify(raw(func(d *contentindex.RawDocument) {
		d.Title, d.RawText = "Striker's late goal", "The striker shot low and the attack paid off in the match."
	}))
	if err != nil {
		t.Fatal(err)
	}
	if doc.PrimaryTopic != "sports" || doc.Topics[0] != "sports" || doc.PrimaryTopicConfidence < 0.9 || doc.IsCrimeRelated || doc.CrimeSubcategory != nil {
		t.Errorf("sports report: primary %q (%.3f), topics %v, crime %v", doc.PrimaryTopic, doc.PrimaryTopicConfidence, doc.Topics, doc.IsCrimeRelated)
	}
	if len(doc.TopicScores) != len(doc.Topics) || doc.TopicScores[0].Score != doc.PrimaryTopicConfidence {
		t.Errorf("topic_scores %v beside topics %v", doc.TopicScores, doc.Topics)
	}
	doc, err = c.Classify(raw(func(d *contentindex.RawDocument) {
		d.Title, d.RawText = "Police: man shot", "Police said a man was shot in an attack overnight."
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsCrimeRelated || doc.CrimeSubcategory == nil || *doc.CrimeSubcategory != "violent_crime" || doc.PrimaryTopic != "violent_crime" {
		t.Errorf("crime report: primary %q, topics %v, crime %v", doc.PrimaryTopic, doc.Topics, doc.IsCrimeRelated)
	}
}

// With a candidate model, every document is decided by one model and
// scored by the other, and OnModelShadow is told both decisions.
func TestModelShadowIsCompared(t *testing.T) {
	t.Parallel()
	engine, err := rules.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := lexicon(t, "[sports]\n3 goal\n[business]\n1 zzz\n"), lexicon(t, "[business]\n3 goal\n[sports]\n1 zzz\n")
	var seen []string
	c, err := New(Config{Topics: engine,
		Model:         func(string, string) (*topicmodel.Scorer, *topicmodel.Scorer) { return a, b },
		OnModelShadow: func(d, s topicmodel.Decision) { seen = append(seen, d.Primary+"/"+s.Primary) }})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := c.Classify(raw(func(d *contentindex.RawDocument) { d.Title, d.RawText = "Goal", "A goal." }))
	if err != nil {
		t.Fatal(err)
	}
	if doc.PrimaryTopic != "sports" || len(seen) != 1 || seen[0] != "sports/business" {
		t.Errorf("decided %q, compared %v", doc.PrimaryTopic, seen)
	}
}

// The default model is the shipped lexicon: a short sports item with one
// keyword of the section gets sports, which the rules alone (two keywords
// needed) did not give it.
func TestDefaultModelDecides(t *testing.T) {
	t.Parallel()
	engine, err := rules.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Topics: engine})
	if err != nil {
		t.Fatal(err)
	}
	var doc *domain.ClassifiedContent
	if doc, err = c.Classify(raw(func(d *contentindex.RawDocument) {
		d.Title, d.RawText = "Late winner", "A football club won on Saturday."
	})); err != nil {
		t.Fatal(err)
	}
	if doc.PrimaryTopic != "sports" {
		t.Errorf("primary %q, topics %v, want sports", doc.PrimaryTopic, doc.Topics)
	}
}
