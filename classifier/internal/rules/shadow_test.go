package rules

import (
	"strconv"
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
	record := func(c Comparison) {
		if c.Agree {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, [2][]Match{c.Answered, c.Other})
	}

	s, err := NewShadow(active, same, ShadowConfig{Epsilon: -1, OnCompare: record})
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
	if _, err := NewShadow(nil, nil, ShadowConfig{}); err == nil {
		t.Error("nil engines: no error")
	}
}

// A rollout split by percentage sends each document to one engine by its
// identity, always the same one, about the given share to the candidate,
// and keeps the documents already on the candidate there when the share
// grows; each comparison is reported with the side that answered.
func TestShadowRolloutByDocumentIdentity(t *testing.T) {
	t.Parallel()
	current := mustEngine(t, MatcherAhoCorasick, testRules())
	candidate := mustEngine(t, MatcherTokenIndex, testRules()[:2]) // answers differently on the other rules' texts
	sides := map[Side]int{}
	var mu sync.Mutex
	onCompare := func(c Comparison) {
		mu.Lock()
		defer mu.Unlock()
		sides[c.Side]++
	}
	shares := map[int]map[string]bool{}
	for _, pct := range []int{0, 10, 50, 100} {
		s, err := NewShadow(current, candidate, ShadowConfig{Epsilon: -1, RolloutPercent: pct, OnCompare: onCompare})
		if err != nil {
			t.Fatal(err)
		}
		onCandidate := map[string]bool{}
		for i := range 2000 {
			id := "doc-" + strconv.Itoa(i)
			side := s.SideOf("alpha_raw_content", id)
			if again := s.SideOf("alpha_raw_content", id); again != side {
				t.Fatalf("%d%%: %s went %s, then %s", pct, id, side, again)
			}
			got := s.MatchDoc("alpha_raw_content", id, "", "drug trafficking")
			want := current.Match("", "drug trafficking")
			if side == SideCandidate {
				want = candidate.Match("", "drug trafficking")
				onCandidate[id] = true
			}
			if !Agree(got, want, 0) {
				t.Fatalf("%d%%: %s answered by the wrong engine", pct, id)
			}
		}
		if n := len(onCandidate); n < pct*20-150 || n > pct*20+150 {
			t.Errorf("%d%%: %d of 2000 documents on the candidate, want about %d", pct, n, pct*20)
		}
		shares[pct] = onCandidate
	}
	for id := range shares[10] {
		if !shares[50][id] {
			t.Errorf("%s was on the candidate at 10%% and left it at 50%%", id)
		}
	}
	candidates := len(shares[10]) + len(shares[50]) + len(shares[100])
	if sides[SideCandidate] != candidates || sides[SideCurrent] != 4*2000-candidates || len(shares[0]) != 0 || len(shares[100]) != 2000 {
		t.Errorf("comparisons by side = %v, want %d on the candidate", sides, candidates)
	}
	// The same document in another index is another document.
	if RolloutBucket("a_raw_content", "x") == RolloutBucket("b_raw_content", "x") && RolloutBucket("a_raw_content", "y") == RolloutBucket("b_raw_content", "y") {
		t.Error("the bucket ignores the index")
	}
	if _, err := NewShadow(current, candidate, ShadowConfig{RolloutPercent: 101}); err == nil {
		t.Error("a rollout of 101% was accepted")
	}
}
