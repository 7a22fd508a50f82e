package rules

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// summary is a Match without the pointer, for comparisons.
type summary struct {
	ID       int64
	Topic    string
	Score    float64
	Coverage float64
	Hits     int
	Unique   int
	Keywords []string
}

func summarize(ms []Match) []summary {
	out := make([]summary, len(ms))
	for i, m := range ms {
		out[i] = summary{m.Rule.ID, m.Rule.Topic, m.Score, m.Coverage, m.Hits, m.UniqueMatches, m.MatchedKeywords}
	}
	return out
}

func mustEngine(t testing.TB, kind MatcherKind, rules []Rule) *Engine {
	t.Helper()
	e, err := NewEngine(kind, rules)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestScore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		hits, keywords int
		score          float64
	}{
		{1, 4, 0.2636294361119891},  // 0.5*ln(2)/2.5 + 0.5*0.25
		{2, 5, 0.41972245773362193}, // 0.5*ln(3)/2.5 + 0.5*0.4
		{3, 20, 0.3522588722239781}, // 0.5*ln(4)/2.5 + 0.5*0.15
		{1, 1, 0.6386294361119891},  // 0.5*ln(2)/2.5 + 0.5
		{11, 11, 0.9969813299576},   // ln(12)/2.5 = 0.99396, just under the cap
		{12, 20, 0.8},               // ln(13)/2.5 > 1: capped at 1
		{20, 20, 1.0},
		{0, 20, 0},
		{3, 0, 0},
	}
	for _, tt := range tests {
		score, coverage := Score(tt.hits, tt.keywords)
		if math.Abs(score-tt.score) > 1e-15 {
			t.Errorf("Score(%d, %d) = %.17g, want %.17g", tt.hits, tt.keywords, score, tt.score)
		}
		if tt.keywords > 0 && math.Abs(coverage-float64(tt.hits)/float64(tt.keywords)) > 1e-15 {
			t.Errorf("Score(%d, %d) coverage = %v", tt.hits, tt.keywords, coverage)
		}
	}
}

func testRules() []Rule {
	return []Rule{
		{ID: 1, Name: "violent", Topic: "violent_crime", Priority: 10, Enabled: true,
			Keywords: []string{"murder", "shooting", "stabbing", "shot dead"}},
		{ID: 2, Name: "property", Topic: "property_crime", Priority: 9, Enabled: true,
			Keywords: []string{"burglary", "Break-in", "break in", "stolen", "", "  "}},
		{ID: 3, Name: "drugs", Topic: "drug_crime", Priority: 9, Enabled: true,
			Keywords: []string{"drug trafficking", "fentanyl", "stolen"}},
		{ID: 4, Name: "sports", Topic: "sports", Priority: 3, Enabled: true, MinConfidence: 0.5,
			Keywords: []string{"hockey", "playoffs", "coach", "arena"}},
		{ID: 5, Name: "disabled", Topic: "weather", Priority: 100, Enabled: false,
			Keywords: []string{"murder"}},
		{ID: 6, Name: "no keywords", Topic: "nothing", Priority: 100, Enabled: true,
			Keywords: []string{"", "--"}},
		{ID: 7, Name: "local", Topic: "local_news", Priority: 9, Enabled: true,
			Keywords: []string{"sudbury", "stolen"}},
	}
}

func TestEngineMatch(t *testing.T) {
	t.Parallel()
	s14, _ := Score(1, 4)
	s13, _ := Score(1, 3)
	s12, _ := Score(1, 2)
	s23, _ := Score(2, 3)
	tests := []struct {
		name        string
		title, body string
		want        []summary
	}{
		{"nothing", "Quiet day", "Nothing happened at all.", []summary{}},
		{"substring is not a match", "Begun", "Murderer? No: a problem with the shootings.", []summary{}},
		{
			// "stolen" is shared by rules 2, 3 and 7: it counts for each.
			// Priority 9 ties are ordered by score, then by ID.
			"shared keyword, sort by priority then score",
			"Car stolen in Sudbury", "A break-in on Elm St. and a shooting.",
			[]summary{
				{1, "violent_crime", s14, 0.25, 1, 1, []string{"shooting"}},
				{7, "local_news", func() float64 { s, _ := Score(2, 2); return s }(), 1, 2, 2, []string{"sudbury", "stolen"}},
				{2, "property_crime", s23, 2.0 / 3, 2, 2, []string{"Break-in", "stolen"}},
				{3, "drug_crime", s13, 1.0 / 3, 1, 1, []string{"stolen"}},
			},
		},
		{
			"equal priority and score: lower id first",
			"", "Stolen!",
			[]summary{
				{7, "local_news", s12, 0.5, 1, 1, []string{"stolen"}},
				{2, "property_crime", s13, 1.0 / 3, 1, 1, []string{"stolen"}},
				{3, "drug_crime", s13, 1.0 / 3, 1, 1, []string{"stolen"}},
			},
		},
		{
			"min_confidence filters",
			"", "The coach left the arena.", // 2 of 4: 0.5*ln(3)/2.5 + 0.25 = 0.4697 < 0.5
			[]summary{},
		},
		{
			"min_confidence passes",
			"Hockey playoffs", "The coach left the arena.",
			[]summary{{4, "sports", func() float64 { s, _ := Score(4, 4); return s }(), 1, 4, 4, []string{"hockey", "playoffs", "coach", "arena"}}},
		},
		{
			"repeats do not count twice",
			"Murder", "murder, MURDER; murder.",
			[]summary{{1, "violent_crime", s14, 0.25, 1, 1, []string{"murder"}}},
		},
		{
			"phrase across punctuation",
			"", "Charged with drug-trafficking.",
			[]summary{{3, "drug_crime", s13, 1.0 / 3, 1, 1, []string{"drug trafficking"}}},
		},
		{
			"no phrase across title and body",
			"Police seize drug", "Trafficking ring broken up; man shot. Dead end street.",
			[]summary{{1, "violent_crime", s14, 0.25, 1, 1, []string{"shot dead"}}},
		},
		{
			"title only",
			"Sudbury", "",
			[]summary{{7, "local_news", s12, 0.5, 1, 1, []string{"sudbury"}}},
		},
	}
	for _, kind := range matcherKinds {
		e := mustEngine(t, kind, testRules())
		for _, tt := range tests {
			t.Run(string(kind)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				got := summarize(e.Match(tt.title, tt.body))
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Match(%q, %q):\n got %+v\nwant %+v", tt.title, tt.body, got, tt.want)
				}
			})
		}
	}
}

func TestEngineCounts(t *testing.T) {
	t.Parallel()
	e := mustEngine(t, MatcherAhoCorasick, testRules())
	// Rules 1, 2, 3, 4, 7: 5 is disabled and 6 has no usable keyword.
	if got := e.RuleCount(); got != 5 {
		t.Errorf("RuleCount = %d, want 5", got)
	}
	// murder shooting stabbing "shot dead" burglary "break in" stolen
	// "drug trafficking" fentanyl hockey playoffs coach arena sudbury.
	if got := e.KeywordCount(); got != 14 {
		t.Errorf("KeywordCount = %d, want 14", got)
	}
	if got := e.Version(); got != 1 {
		t.Errorf("Version = %d, want 1", got)
	}
	if got := e.Kind(); got != MatcherAhoCorasick {
		t.Errorf("Kind = %q", got)
	}
	if e, err := NewEngine("", nil); err != nil || e.Kind() != MatcherKindDefault || e.Match("gun", "gun") != nil {
		t.Errorf("NewEngine(\"\", nil) = %v, %v", e, err)
	}
}

func TestEngineRejectsInvalidRules(t *testing.T) {
	t.Parallel()
	if _, err := NewEngine("trie", testRules()); err == nil {
		t.Error("unknown kind: no error")
	}
	for name, rules := range map[string][]Rule{
		"duplicate id":         {{ID: 1, Enabled: true, Keywords: []string{"a"}}, {ID: 1, Enabled: true, Keywords: []string{"b"}}},
		"min_confidence above": {{ID: 1, Enabled: true, MinConfidence: 1.5, Keywords: []string{"a"}}},
		"min_confidence below": {{ID: 1, Enabled: true, MinConfidence: -0.1, Keywords: []string{"a"}}},
		"min_confidence NaN":   {{ID: 1, Enabled: true, MinConfidence: math.NaN(), Keywords: []string{"a"}}},
	} {
		if _, err := NewEngine(MatcherTokenIndex, rules); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("%s: err = %v, want ErrInvalidRule", name, err)
		}
	}
	// Disabled rules are not validated: they are not used.
	if _, err := NewEngine(MatcherTokenIndex, []Rule{{ID: 1, Enabled: true, Keywords: []string{"a"}}, {ID: 1, MinConfidence: 7}}); err != nil {
		t.Errorf("disabled duplicate: %v", err)
	}
}

func TestEngineUpdate(t *testing.T) {
	t.Parallel()
	rules := testRules()
	e := mustEngine(t, MatcherTokenIndex, rules)
	// The engine keeps its own copy: the caller's slices can change.
	rules[0].Keywords[0] = "changed"
	rules[0].Topic = "changed"
	if got := e.MatchText("murder"); len(got) != 1 || got[0].Rule.Topic != "violent_crime" {
		t.Fatalf("after caller mutation: %+v", summarize(got))
	}
	if err := e.Update([]Rule{{ID: 9, Topic: "weather", Enabled: true, Keywords: []string{"snowfall"}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.MatchText("murder and snowfall"); len(got) != 1 || got[0].Rule.Topic != "weather" {
		t.Errorf("after update: %+v", summarize(got))
	}
	if e.Version() != 2 || e.RuleCount() != 1 {
		t.Errorf("version %d, rules %d", e.Version(), e.RuleCount())
	}
	// A failed update keeps the snapshot in use.
	if err := e.Update([]Rule{{ID: 1, Enabled: true, MinConfidence: 2, Keywords: []string{"x"}}}); err == nil {
		t.Fatal("invalid update: no error")
	}
	if e.Version() != 2 || len(e.MatchText("snowfall")) != 1 {
		t.Errorf("failed update changed the engine: version %d", e.Version())
	}
}

// TestEnginesAgree runs the three engine kinds on random rule sets and texts.
func TestEnginesAgree(t *testing.T) {
	t.Parallel()
	vocab := strings.Fields("police fire gun a b ab ba drug trafficking café cafe city s o brien")
	r := rand.New(rand.NewPCG(7, 8))
	words := func(n int, sep string) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(ws, sep)
	}
	for iter := range 300 {
		rules := make([]Rule, r.IntN(12))
		for i := range rules {
			kws := make([]string, 1+r.IntN(6))
			for j := range kws {
				kws[j] = words(1+r.IntN(2), "-")
			}
			rules[i] = Rule{ID: int64(i + 1), Topic: fmt.Sprint("t", r.IntN(4)), Keywords: kws,
				MinConfidence: r.Float64() * 0.5, Priority: r.IntN(3), Enabled: r.IntN(8) > 0}
		}
		title, body := words(r.IntN(5), " "), words(r.IntN(40), ", ")
		want := summarize(mustEngine(t, MatcherNaive, rules).Match(title, body))
		for _, kind := range []MatcherKind{MatcherAhoCorasick, MatcherTokenIndex} {
			if got := summarize(mustEngine(t, kind, rules).Match(title, body)); !reflect.DeepEqual(got, want) {
				t.Fatalf("iteration %d, %s:\n got %+v\nwant %+v", iter, kind, got, want)
			}
		}
	}
}

// TestEngineConcurrentUpdate matches from many goroutines while another
// swaps between two rule sets: every result is exactly the result of one
// of the two, never a mix. Run with -race.
func TestEngineConcurrentUpdate(t *testing.T) {
	t.Parallel()
	setA := testRules()
	setB := []Rule{
		{ID: 1, Topic: "violent_crime", Priority: 1, Enabled: true, Keywords: []string{"murder", "gun"}},
		{ID: 20, Topic: "politics", Priority: 5, Enabled: true, Keywords: []string{"mayor", "council"}},
	}
	title, body := "Mayor on murder", "A gun was stolen in Sudbury; the council met. Drug trafficking."
	for _, kind := range matcherKinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			wantA := summarize(mustEngine(t, kind, setA).Match(title, body))
			wantB := summarize(mustEngine(t, kind, setB).Match(title, body))
			e := mustEngine(t, kind, setA)
			var stop atomic.Bool
			var updates sync.WaitGroup
			updates.Go(func() {
				for i := 0; !stop.Load(); i++ {
					rules := setA
					if i%2 == 0 {
						rules = setB
					}
					if err := e.Update(rules); err != nil {
						t.Error(err)
						return
					}
				}
			})
			var matchers sync.WaitGroup
			var sawA, sawB atomic.Int64
			for range 8 {
				matchers.Go(func() {
					for range 300 {
						switch got := summarize(e.Match(title, body)); {
						case reflect.DeepEqual(got, wantA):
							sawA.Add(1)
						case reflect.DeepEqual(got, wantB):
							sawB.Add(1)
						default:
							t.Errorf("mixed result %+v", got)
							return
						}
						_ = e.RuleCount() + e.KeywordCount()
					}
				})
			}
			matchers.Wait()
			stop.Store(true)
			updates.Wait()
			if e.Version() < 2 {
				t.Errorf("no update ran: version %d", e.Version())
			}
			t.Logf("results from set A %d, set B %d, version %d", sawA.Load(), sawB.Load(), e.Version())
		})
	}
}

func TestIsCrimeSubcategory(t *testing.T) {
	t.Parallel()
	for _, topic := range []string{"violent_crime", "property_crime", "drug_crime", "organized_crime", "criminal_justice"} {
		if !IsCrimeSubcategory(topic) {
			t.Errorf("IsCrimeSubcategory(%q) = false", topic)
		}
	}
	for _, topic := range []string{"", "crime", "politics", "Violent_Crime"} {
		if IsCrimeSubcategory(topic) {
			t.Errorf("IsCrimeSubcategory(%q) = true", topic)
		}
	}
}
