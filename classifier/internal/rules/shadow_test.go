package rules

import (
	"sync"
	"testing"
)

func TestShadow(t *testing.T) {
	t.Parallel()
	active := mustEngine(t, MatcherAhoCorasick, testRules())
	same := mustEngine(t, MatcherTokenIndex, testRules())
	texts := [][2]string{
		{"Car stolen in Sudbury", "A break-in and a shooting."},
		{"Hockey playoffs", "coach, arena"},
		{"", "drug trafficking"},
		{"nothing", "at all"},
	}

	var mu sync.Mutex
	var calls [][2][]Match
	record := func(a, s []Match) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, [2][]Match{a, s})
	}

	s, err := NewShadow(active, same, -1, record)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range texts {
		got := s.Match(tx[0], tx[1])
		if !Agree(got, active.Match(tx[0], tx[1]), 0) {
			t.Errorf("Shadow.Match did not return the active result for %q", tx)
		}
	}
	if s.Options() != active.Options() || len(s.Explain("Car stolen in Sudbury", "")) == 0 {
		t.Errorf("Shadow.Options/Explain are not the active engine's")
	}
	if s.Compared() != 4 || s.Disagreements() != 0 || len(calls) != 0 {
		t.Fatalf("same rules: compared %d, disagreements %d, calls %d", s.Compared(), s.Disagreements(), len(calls))
	}

	// A shadow whose sports rule has no threshold and whose drug rule is
	// gone disagrees on the texts those rules decide.
	changed := testRules()
	changed[3].MinConfidence = 0
	changed = append(changed[:2], changed[3:]...)
	if err := s.ShadowEngine().Update(changed); err != nil {
		t.Fatal(err)
	}
	s.Match("", "The coach left the arena.") // sports only in the shadow
	s.Match("", "drug trafficking")          // drug_crime only in the active
	s.Match("nothing", "at all")             // both empty
	s.MatchText("Sudbury break-in")          // property and local in both
	if s.Compared() != 8 || s.Disagreements() != 2 {
		t.Errorf("compared %d, disagreements %d; want 8, 2", s.Compared(), s.Disagreements())
	}
	if len(calls) != 2 || len(calls[0][0]) != 0 || len(calls[0][1]) != 1 || calls[0][1][0].Rule.Topic != "sports" {
		t.Errorf("callback calls: %+v", calls)
	}

	// Update gives both engines the same rules again.
	if err := s.Update(testRules()); err != nil {
		t.Fatal(err)
	}
	s.Match("", "drug trafficking")
	if s.Disagreements() != 2 {
		t.Errorf("after Update: disagreements %d", s.Disagreements())
	}
}

func TestShadowEpsilonAndTopics(t *testing.T) {
	t.Parallel()
	a := []Match{{Rule: &Rule{ID: 1, Topic: "x"}, Score: 0.5}, {Rule: &Rule{ID: 2, Topic: "x"}, Score: 0.7}}
	b := []Match{{Rule: &Rule{ID: 3, Topic: "x"}, Score: 0.7000001}}
	if !Agree(a, b, 1e-3) {
		t.Error("same topic, best scores within epsilon: want agreement")
	}
	if Agree(a, b, 1e-9) {
		t.Error("scores apart by more than epsilon: want disagreement")
	}
	if Agree(a, append(b, Match{Rule: &Rule{Topic: "y"}, Score: 1}), 1) {
		t.Error("different topic sets: want disagreement")
	}
	if !Agree(nil, []Match{}, 0) {
		t.Error("nil and empty: want agreement")
	}
	if _, err := NewShadow(nil, nil, 0, nil); err == nil {
		t.Error("nil engines: no error")
	}
}
