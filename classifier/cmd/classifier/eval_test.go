package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/testenv"
)

const labelsPath = "../../testdata/eval/labels.ndjson"

func TestReadLabels(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"unknown field": `{"id":"a","title":"t","topics":[],"topic":"x"}`,
		"no id":         `{"title":"t","topics":[]}`,
		"no text":       `{"id":"a","topics":[]}`,
		"duplicate id":  "{\"id\":\"a\",\"title\":\"t\"}\n{\"id\":\"a\",\"title\":\"u\"}",
		"empty":         "\n# nothing\n",
	} {
		if _, err := readLabels(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	ls, err := readLabels(strings.NewReader("# comment\n\n{\"id\":\"a\",\"title\":\"t\",\"topics\":[\"drug_crime\",\"violent_crime\"],\"also\":[\"x\"]}\n"))
	if err != nil || len(ls) != 1 {
		t.Fatalf("readLabels = %+v, %v", ls, err)
	}
	if crime, optional := ls[0].expectedCrime(); !crime || optional || ls[0].expectedSubcategory() != "violent_crime" {
		t.Errorf("expected crime %v/%v, subcategory %q", crime, optional, ls[0].expectedSubcategory())
	}
}

// TestEvaluateFigures checks the counts and figures on a small set.
func TestEvaluateFigures(t *testing.T) {
	t.Parallel()
	ruleSet := []rules.Rule{
		{ID: 1, Name: "Violent", Topic: "violent_crime", Enabled: true, MinKeywords: 2, Priority: 10,
			Keywords: []string{"shooting", "gunman", "homicide"}},
		{ID: 2, Name: "Business", Topic: "business", Enabled: true, MinKeywords: 2,
			Keywords: []string{"acquire", "shares", "economy", "profit"}},
		{ID: 3, Name: "Science", Topic: "science", Enabled: true, MinKeywords: 2,
			Keywords: []string{"astronomers", "meteor", "telescope"}},
	}
	labels, err := readLabels(strings.NewReader(strings.Join([]string{
		`{"id":"1","title":"Gunman kills two","body":"A shooting downtown.","topics":["violent_crime"]}`,
		`{"id":"2","title":"Acme acquires Beta","body":"Shares rose.","topics":["business"]}`,
		`{"id":"3","title":"Oil falls","body":"The economy slowed.","topics":["business"]}`,
		`{"id":"4","title":"Shooting star","body":"Astronomers saw a meteor during a shooting at a film set with a gunman actor.","topics":["science"]}`,
		`{"id":"5","title":"Recipe","body":"Soup.","topics":[]}`,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	engine, err := rules.NewEngineWithOptions(rules.Options{Stemming: true}, ruleSet)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evaluate(engine, nil, topicmodel.DecideConfig{}, []string{"violent_crime", "business", "science"}, labels)
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]TopicStats{}
	for _, s := range rep.Topics {
		stats[s.Topic] = s
	}
	if s := stats["business"]; s.Support != 2 || s.TP != 1 || s.FN != 1 || s.FP != 0 || s.Recall != 0.5 || s.Precision != 1 {
		t.Errorf("business = %+v", s)
	}
	if s := stats["violent_crime"]; s.Support != 1 || s.TP != 1 || s.FP != 1 || s.Precision != 0.5 {
		t.Errorf("violent_crime = %+v", s)
	}
	if rep.NonCrime != 4 || rep.CrimeFP != 1 || rep.Crime != 1 || rep.CrimeTP != 1 || rep.SubOK != 1 {
		t.Errorf("crime figures: %+v", rep)
	}
	if rep.News != 4 || rep.NoTopic != 1 {
		t.Errorf("no topic: %d of %d, want 1 of 4", rep.NoTopic, rep.News)
	}
	if len(rep.Misses) != 1 || rep.Misses[0].ID != "3" || rep.Misses[0].Missing != 1 ||
		strings.Join(rep.Misses[0].Found, ",") != "economy" {
		t.Errorf("misses = %+v", rep.Misses)
	}
	fails := checkFloors(rep, 0.85, 0.9, 0.02, 0.1)
	if len(fails) != 4 { // business recall, violent precision, crime FP, no topic; science meets its floors
		t.Errorf("floors: %q", fails)
	}
	var out bytes.Buffer
	printReport(&out, rep, "test", 5, true)
	for _, want := range []string{"| business ! | 2 | 1 | 0 | 1 | 1.000 | 0.500 | 0.667 |", "crime false positives: 1 of 4", "found 1 of 2 needed: economy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestEvalShippedRules runs the labeled set against the default rules the
// migrations install: the shipped defaults meet every floor, stemming does
// not make them worse, and every matcher gives the same result on every
// document (the shadow comparison agrees).
func TestEvalShippedRules(t *testing.T) {
	t.Parallel()
	testenv.Env(t, "POSTGRES_ADMIN_URL", "postgres")
	ruleSet, err := loadEvalRules(t.Context(), "migrations")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(labelsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	labels, err := readLabels(f)
	if err != nil {
		t.Fatal(err)
	}
	report := func(opts rules.Options) *Report {
		t.Helper()
		engine, err := rules.NewEngineWithOptions(opts, ruleSet)
		if err != nil {
			t.Fatal(err)
		}
		var topics []string
		for _, r := range engine.Rules() {
			topics = append(topics, r.Topic)
		}
		rep, err := evaluate(engine, nil, topicmodel.DecideConfig{}, topics, labels)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	shipped := report(rules.DefaultOptions())
	if fails := checkFloors(shipped, FloorRecall, FloorPrecision, FloorCrimeFP, FloorNoTopic); len(fails) > 0 {
		t.Errorf("the shipped defaults are below their floors:\n%s", strings.Join(fails, "\n"))
	}
	flat := rules.DefaultOptions()
	flat.Stemming = false
	if off := report(flat); off.MicroF1 > shipped.MicroF1 {
		t.Errorf("stemming lowers micro F1: %.3f with, %.3f without", shipped.MicroF1, off.MicroF1)
	}

	ac, err := rules.NewEngine(rules.MatcherAhoCorasick, ruleSet)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []rules.MatcherKind{rules.MatcherTokenIndex, rules.MatcherNaive} {
		other, err := rules.NewEngine(kind, ruleSet)
		if err != nil {
			t.Fatal(err)
		}
		shadow, err := rules.NewShadow(ac, other, rules.ShadowConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range labels {
			shadow.Match(l.Title, l.Body)
		}
		if shadow.Disagreements() != 0 {
			t.Errorf("%s disagrees with aho_corasick on %d of %d documents", kind, shadow.Disagreements(), shadow.Compared())
		}
	}
}
