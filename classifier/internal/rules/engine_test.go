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

	"github.com/kljensen/snowball/english"
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

// mustEngine builds an engine without stemming, so that the tests of exact
// whole-word semantics see the tokens as written; stemming has tests of its
// own.
func mustEngine(t testing.TB, kind MatcherKind, rules []Rule) *Engine {
	t.Helper()
	return mustEngineWith(t, Options{Matcher: kind}, rules)
}

func mustEngineWith(t testing.TB, opts Options, rules []Rule) *Engine {
	t.Helper()
	e, err := NewEngineWithOptions(opts, rules)
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
		"unknown effect":       {{ID: 1, Enabled: true, Effect: "veto", Keywords: []string{"a"}}},
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

// TestEnginesAgree runs the three engine kinds on random rule sets and texts,
// with stemming off and on and with both scorings: every kind gives the same
// result as the naive oracle.
func TestEnginesAgree(t *testing.T) {
	t.Parallel()
	vocab := strings.Fields("police policing fire fired firing gun guns a b ab ba drug drugs trafficking trafficked café cafe city cities s o brien")
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
				MinConfidence: r.Float64() * 0.5, Priority: r.IntN(3), Enabled: r.IntN(8) > 0, MinKeywords: r.IntN(3)}
		}
		title, body := words(r.IntN(5), " "), words(r.IntN(40), ", ")
		opts := Options{Matcher: MatcherNaive, Stemming: iter%2 == 1, Scoring: []Scoring{ScoringSpec, ScoringMinKeywords}[iter/2%2]}
		want := summarize(mustEngineWith(t, opts, rules).Match(title, body))
		for _, kind := range []MatcherKind{MatcherAhoCorasick, MatcherTokenIndex} {
			opts.Matcher = kind
			if got := summarize(mustEngineWith(t, opts, rules).Match(title, body)); !reflect.DeepEqual(got, want) {
				t.Fatalf("iteration %d, %+v:\n got %+v\nwant %+v", iter, opts, got, want)
			}
		}
	}
}

// TestEngineStemming checks inflection-aware matching: keywords and text
// meet at their stems, whole words only, with every matcher.
func TestEngineStemming(t *testing.T) {
	t.Parallel()
	rules := []Rule{
		{ID: 1, Name: "deals", Topic: "business", Enabled: true, MinKeywords: 2,
			Keywords: []string{"acquire", "acquisition", "shares", "merger", "take over"}},
		{ID: 2, Name: "crime", Topic: "violent_crime", Enabled: true, MinKeywords: 1,
			Keywords: []string{"shooting", "murdered", "murder", "gun"}},
		{ID: 3, Name: "energy", Topic: "energy", Enabled: true, MinKeywords: 2,
			Keywords: []string{"crude oil", "oil price", "barrel"}},
	}
	tests := []struct {
		text       string
		stem, flat []string // topics with stemming on, off
	}{
		{"Acme acquires Widget Co; its shares jumped.", []string{"business"}, nil},
		{"The acquired firm's share price rose after the acquisitions.", []string{"business"}, nil},
		{"Rivals were taking over each other: two mergers, both acquiring.", []string{"business"}, nil},
		{"Oil prices fell below $70 a barrel as crude oil stocks rose.", []string{"energy"}, []string{"energy"}},
		{"Oil prices fell to $70 for two barrels.", []string{"energy"}, nil},
		{"Two men were shot in a shootings spree.", []string{"violent_crime"}, nil},
		// Whole words still: no stem matches inside another word.
		{"Work has begun; a shoot-out between guns? No: gunnery drills.", []string{"violent_crime"}, nil},
		{"Work has begun on the gunnery range.", nil, nil},
	}
	for _, kind := range matcherKinds {
		stem := mustEngineWith(t, Options{Matcher: kind, Stemming: true}, rules)
		flat := mustEngineWith(t, Options{Matcher: kind}, rules)
		for _, tt := range tests {
			for _, c := range []struct {
				e    *Engine
				want []string
			}{{stem, tt.stem}, {flat, tt.flat}} {
				var got []string
				for _, m := range c.e.MatchText(tt.text) {
					got = append(got, m.Rule.Topic)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("%s stemming=%t %q: topics %v, want %v", kind, c.e.Options().Stemming, tt.text, got, c.want)
				}
			}
		}
		// "murdered" and "murder" share a stem: one keyword of the rule,
		// spelled as the rule first lists it, and coverage counts it once.
		ms := stem.MatchText("He was murdered; the murder weapon was a gun.")
		if len(ms) != 1 || ms[0].Keywords != 3 || !reflect.DeepEqual(ms[0].MatchedKeywords, []string{"murdered", "gun"}) {
			t.Errorf("%s: stem-duplicate keywords: %+v", kind, ms)
		}
	}
	if got := StemText("acquires acquired \n acquiring"); got != "acquir acquir \n acquir" {
		t.Errorf("StemText = %q", got)
	}
	if NewEngineMust := mustEngine(t, "", nil); NewEngineMust.Options().Stemming {
		t.Error("zero Options stem")
	}
	if e, _ := NewEngine("", nil); e.Options() != DefaultOptions() {
		t.Errorf("NewEngine options = %+v, want %+v", e.Options(), DefaultOptions())
	}
}

// TestEngineScoring checks the two thresholds and Explain: under
// ScoringMinKeywords a rule with MinKeywords needs that many distinct
// keywords whatever its list length; under ScoringSpec the same rule needs
// the score, which a long list dilutes.
func TestEngineScoring(t *testing.T) {
	t.Parallel()
	long := make([]string, 30)
	for i := range long {
		long[i] = fmt.Sprintf("w%d", i)
	}
	long[0], long[1], long[2] = "economy", "inflation", "shares"
	rules := []Rule{{ID: 1, Name: "business", Topic: "business", Enabled: true, MinConfidence: 0.3, MinKeywords: 2, Keywords: long}}
	texts := []struct {
		text          string
		spec, minKeys bool
	}{
		{"The economy slowed.", false, false},
		{"The economy slowed and inflation rose.", false, true},
		{"The economy slowed, inflation rose and shares fell.", true, true},
	}
	for _, kind := range matcherKinds {
		spec := mustEngineWith(t, Options{Matcher: kind, Scoring: ScoringSpec}, rules)
		minKeys := mustEngineWith(t, Options{Matcher: kind, Scoring: ScoringMinKeywords}, rules)
		for _, tt := range texts {
			if got := len(spec.MatchText(tt.text)) == 1; got != tt.spec {
				t.Errorf("%s spec %q: matched %t", kind, tt.text, got)
			}
			if got := len(minKeys.MatchText(tt.text)) == 1; got != tt.minKeys {
				t.Errorf("%s min_keywords %q: matched %t", kind, tt.text, got)
			}
		}
		// Explain shows the rule that found "economy" and what it lacked.
		for _, c := range []struct {
			e       *Engine
			needed  int
			byCount bool
		}{{spec, 3, false}, {minKeys, 2, true}} {
			ex := c.e.Explain("Oil prices fell", "as the economy slowed.")
			if len(ex) != 1 || ex[0].Matched || ex[0].Hits != 1 || ex[0].Keywords != 30 || ex[0].Needed != c.needed ||
				ex[0].ByMinKeywords != c.byCount || !reflect.DeepEqual(ex[0].MatchedKeywords, []string{"economy"}) {
				t.Errorf("%s %s: Explain = %+v", kind, c.e.Options().Scoring, ex)
			}
			if c.e.Match("Oil prices fell", "as the economy slowed.") != nil {
				t.Errorf("%s: Match returned a rule below its threshold", kind)
			}
		}
	}
	// A MinKeywords above the rule's keyword count can never be met.
	e := mustEngine(t, "", []Rule{{ID: 1, Enabled: true, MinKeywords: 3, Keywords: []string{"a1", "b1"}}})
	if ex := e.Explain("", "a1 b1"); len(ex) != 1 || ex[0].Matched || ex[0].Needed != 3 {
		t.Errorf("unreachable min_keywords: %+v", ex)
	}
	if _, err := NewEngine("", []Rule{{ID: 1, Enabled: true, MinKeywords: -1, Keywords: []string{"a"}}}); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("negative min_keywords: %v", err)
	}
	if _, err := NewEngineWithOptions(Options{Scoring: "coverage"}, nil); err == nil {
		t.Error("unknown scoring: no error")
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

// The snapshot carries each rule's effect to its matches, "" spelled out
// as support, so the topic decision reads it from Match.Rule.
func TestEngineCarriesEffect(t *testing.T) {
	t.Parallel()
	e, err := NewEngine(MatcherTokenIndex, []Rule{
		{ID: 1, Name: "plain", Topic: "sports", Enabled: true, Keywords: []string{"goal"}},
		{ID: 2, Name: "veto", Topic: CrimeFamily, Enabled: true, Effect: EffectExclude, Keywords: []string{"goal"}},
		{ID: 3, Name: "force", Topic: "local_news", Enabled: true, Effect: EffectOverride, Keywords: []string{"goal"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Effect{"plain": EffectSupport, "veto": EffectExclude, "force": EffectOverride}
	got := e.Match("", "a goal")
	if len(got) != 3 {
		t.Fatalf("matches %+v, want the three rules", got)
	}
	for _, m := range got {
		if m.Rule.Effect != want[m.Rule.Name] {
			t.Errorf("%s: effect %q, want %q", m.Rule.Name, m.Rule.Effect, want[m.Rule.Name])
		}
	}
	for _, r := range e.Rules() {
		if r.Effect != want[r.Name] {
			t.Errorf("Rules() %s: effect %q, want %q", r.Name, r.Effect, want[r.Name])
		}
	}
	for in, want := range map[string]Effect{"": EffectSupport, "support": EffectSupport, "exclude": EffectExclude, "override": EffectOverride} {
		if got, err := ParseEffect(in); got != want || err != nil {
			t.Errorf("ParseEffect(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseEffect("Exclude"); err == nil {
		t.Error(`ParseEffect("Exclude"): no error`)
	}
	if !Vetoes(CrimeFamily, "drug_crime") || !Vetoes(CrimeFamily, CrimeFamily) || Vetoes(CrimeFamily, "sports") ||
		!Vetoes("sports", "sports") || Vetoes("violent_crime", "drug_crime") {
		t.Error("Vetoes: the crime family vetoes every crime subcategory, any other topic itself alone")
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

// TestStemConcurrent stems from many goroutines at once (the memo is shared
// by every engine and worker): every result equals the stemmer's own. Run
// with -race.
func TestStemConcurrent(t *testing.T) {
	t.Parallel()
	words := strings.Fields("acquires acquired acquiring shootings shooting shot prices priced councillors " +
		"theatres vandals vandalism elections referendum café montréal 2026 ai un")
	want := make([]string, len(words))
	for i, w := range words {
		want[i] = english.Stem(Normalize(w), false)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				j := (g + i) % len(words)
				if got := Stem(Normalize(words[j])); got != want[j] && !(len(Normalize(words[j])) <= 2 && got == Normalize(words[j])) {
					t.Errorf("Stem(%q) = %q, want %q", words[j], got, want[j])
					return
				}
			}
		})
	}
	wg.Wait()
}
