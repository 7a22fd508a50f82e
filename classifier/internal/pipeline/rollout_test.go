package pipeline

import (
	"testing"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/infrastructure/contentindex"
)

// With a matcher rollout the pipeline classifies each document with the
// engine its identity picks: at 100% every document gets the candidate's
// topics, at 0% the current engine's, and the comparison is reported with
// the side that answered.
func TestClassifyFollowsTheMatcherRollout(t *testing.T) {
	t.Parallel()
	current, err := rules.NewEngine(rules.MatcherAhoCorasick, []rules.Rule{
		{ID: 1, Topic: "politics", Keywords: []string{"council"}, Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	candidate, err := rules.NewEngine(rules.MatcherTokenIndex, []rules.Rule{
		{ID: 1, Topic: "civic", Keywords: []string{"council"}, Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		percent int
		topic   string
		side    rules.Side
	}{{0, "politics", rules.SideCurrent}, {100, "civic", rules.SideCandidate}} {
		var sides []rules.Side
		shadow, err := rules.NewShadow(current, candidate, rules.ShadowConfig{RolloutPercent: tc.percent,
			OnCompare: func(c rules.Comparison) { sides = append(sides, c.Side) }})
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(Config{Topics: shadow, Model: rulesAlone})
		if err != nil {
			t.Fatal(err)
		}
		doc, err := p.Classify(raw(func(d *contentindex.RawDocument) { d.RawText = "The council met." }))
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Topics) != 1 || doc.Topics[0] != tc.topic || len(sides) != 1 || sides[0] != tc.side {
			t.Errorf("%d%%: topics %v, sides %v; want %s answered by %s", tc.percent, doc.Topics, sides, tc.topic, tc.side)
		}
	}
}
