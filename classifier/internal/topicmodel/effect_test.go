package topicmodel

import (
	"slices"
	"testing"

	"github.com/north-cloud/classifier/internal/rules"
)

// violentRule is crimeEngine's crime rule: two of its words flag a document
// when the rules decide alone.
var violentRule = rules.Rule{ID: 1, Name: "Violent", Topic: "violent_crime", Enabled: true, MinKeywords: 2, Priority: 100,
	Keywords: []string{"shot", "attack", "killed", "police", "arrested", "stabbed"}}

// sportsAndGames is the exclude rule of docs/classification.md: the words of
// a match report or a video game veto crime as a whole.
var sportsAndGames = rules.Rule{ID: 9, Name: "Sports and games context", Topic: rules.CrimeFamily, Effect: rules.EffectExclude,
	Enabled: true, MinKeywords: 2, Priority: 200,
	Keywords: []string{"match", "goal", "striker", "derby", "league", "fans", "video game", "level", "boss fight", "players"}}

func effectEngine(t *testing.T, rs ...rules.Rule) *rules.Engine {
	t.Helper()
	e, err := rules.NewEngine("", rs)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func topicsOf(d Decision) []string {
	var out []string
	for _, x := range d.Topics {
		out = append(out, x.Topic)
	}
	return out
}

const (
	matchTitle = "Rovers stun the leaders in the derby"
	matchBody  = "Okafor shot from 25 yards, the attack never let up and the second goal killed the match in front of the fans."
	gameTitle  = "Killed in the first level"
	gameBody   = "The boss fight: you are shot, the attack of the horde killed us again and again in the video game, and players will love it."
	crimeTitle = "Man shot and killed outside a bar"
	crimeBody  = "Police said a man was shot and killed in an attack outside a bar on Friday; two men were arrested."
)

// An exclude rule for crime with sports and video game words keeps a match
// report and a game review that use "shot", "attack" and "killed" from
// being flagged, with the rules alone and with a model that has a crime
// topic; a real crime report, which has none of those words, is still
// flagged. Without the exclude rule the same reports are flagged, so the
// veto is what stops them.
func TestExcludeCrimeInSportsAndGames(t *testing.T) {
	t.Parallel()
	crimeLexicon := mustLexicon(t, testLexicon+"[crime]\n1.5 killed\n1 shot\n1 attack\n1.5 arrested\n")
	for _, tc := range []struct {
		name        string
		model       *Scorer
		title, body string
	}{
		{"match report, rules alone", nil, matchTitle, matchBody},
		{"game review, crime lexicon", crimeLexicon, gameTitle, gameBody},
		{"game review, rules alone", nil, gameTitle, gameBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if d := decide(t, tc.model, effectEngine(t, violentRule), tc.title, tc.body); !d.Crime {
				t.Fatalf("without the exclude rule: %+v, want it flagged (else the test shows nothing)", d)
			}
			d := decide(t, tc.model, effectEngine(t, violentRule, sportsAndGames), tc.title, tc.body)
			if d.Crime || d.Subcategory != "" || slices.ContainsFunc(d.Topics, func(x TopicScore) bool { return rules.IsCrimeSubcategory(x.Topic) }) {
				t.Errorf("with the exclude rule: %+v, want no crime topic and no flag", d)
			}
			if slices.Contains(topicsOf(d), rules.CrimeFamily) {
				t.Errorf("the exclude rule's topic was kept: %v", topicsOf(d))
			}
		})
	}
	for name, model := range map[string]*Scorer{"rules alone": nil, "crime lexicon": crimeLexicon} {
		d := decide(t, model, effectEngine(t, violentRule, sportsAndGames), crimeTitle, crimeBody)
		if !d.Crime || d.Subcategory != "violent_crime" || d.Primary != "violent_crime" {
			t.Errorf("crime report, %s: %+v, want violent_crime flagged", name, d)
		}
	}
}

// An exclude rule's keywords are never evidence for its topic, passing or
// not: a rule excluding sports that lists sports words and does not pass
// leaves the decision exactly as it is with no rule at all (a support rule
// with those words raises sports' confidence).
func TestExcludeKeywordsAreNotEvidence(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	title, body := "Game night", "A new game for the smartphone; the striker in it scores a goal every match."
	words := []string{"striker", "goal", "match", "penalty"}
	veto := rules.Rule{ID: 5, Name: "Not sports", Topic: "sports", Effect: rules.EffectExclude, Enabled: true, MinKeywords: 4, Keywords: words}
	none := decide(t, s, effectEngine(t), title, body)
	excluded := decide(t, s, effectEngine(t, veto), title, body)
	if !slices.Equal(excluded.Topics, none.Topics) || excluded.Primary != none.Primary {
		t.Errorf("a non-passing exclude rule: %+v, with no rule %+v; want the same", excluded, none)
	}
	supported := decide(t, s, effectEngine(t, rules.Rule{ID: 5, Name: "Sports", Topic: "sports", Enabled: true, MinKeywords: 4, Keywords: words}), title, body)
	if score(supported, "sports") <= score(none, "sports") && supported.Primary == none.Primary {
		t.Errorf("a support rule with the same words: %+v, no rule %+v; want more sports (else the test shows nothing)", supported, none)
	}
	if d := decide(t, nil, effectEngine(t, veto), crimeTitle, "The striker's goal in the match."); d.Primary != "" {
		t.Errorf("rules alone, a non-passing exclude rule: %+v, want no topic", d)
	}
}

// score is topic's probability in d, 0 when it was not kept.
func score(d Decision, topic string) float64 {
	for _, x := range d.Topics {
		if x.Topic == topic {
			return x.Score
		}
	}
	return 0
}

// Excluding a section drops it from the softmax: the next section is
// primary, with the vetoed section's probability added to it, and the
// vetoed section is not kept. Excluding the only section with evidence
// leaves no topic rather than a section with nothing but its bias.
func TestExcludeSectionMakesTheNextPrimary(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	title, body := "Striker's club posts a profit", "The striker scored; the club's shares rose after a record profit in the match season."
	before := decide(t, s, effectEngine(t), title, body)
	if before.Primary != "sports" {
		t.Fatalf("without a veto: %+v, want sports primary (else the test shows nothing)", before)
	}
	clubAccounts := rules.Rule{ID: 7, Name: "Club accounts", Topic: "sports", Effect: rules.EffectExclude, Enabled: true, MinKeywords: 2,
		Keywords: []string{"shares", "profit", "accounts"}}
	after := decide(t, s, effectEngine(t, clubAccounts), title, body)
	if after.Primary != "business" || slices.Contains(topicsOf(after), "sports") {
		t.Fatalf("sports vetoed: %+v, want business primary and no sports", after)
	}
	var businessBefore float64
	sc := s.Score(title, body)
	businessBefore = sc.Probs[slices.Index(s.Topics(), "business")]
	if after.Confidence <= businessBefore {
		t.Errorf("business confidence %.4f after the veto, %.4f before: the vetoed mass should go to the rest", after.Confidence, businessBefore)
	}
	if d := decide(t, s, effectEngine(t, clubAccounts), "Striker's late goal", "The striker scored the goal of the season; shares and profit for all."); d.Primary != "business" {
		t.Errorf("business words beside a vetoed sports report: %+v, want business", d)
	}
	onlySports := decide(t, s, effectEngine(t, rules.Rule{ID: 8, Name: "Not sports", Topic: "sports", Effect: rules.EffectExclude,
		Enabled: true, MinKeywords: 1, Keywords: []string{"striker"}}), "Late winner", "The striker scored in the last minute.")
	if onlySports.Primary != "" || len(onlySports.Topics) != 0 {
		t.Errorf("the only section found vetoed: %+v, want no topic", onlySports)
	}
}

// An override rule that passes makes its topic primary over a confident
// model, with the rule's score as its confidence; the model's primary stays
// beside it when it reaches SecondaryMin. With no model it is primary over
// a rule of higher priority.
func TestOverrideMakesItsTopicPrimary(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	title, body := "Striker's late goal wins the match", "The striker scored the goal of the season at the stadium the city council owns."
	if d := decide(t, s, effectEngine(t), title, body); d.Primary != "sports" || d.Confidence < 0.9 {
		t.Fatalf("without an override: %+v, want a confident sports", d)
	}
	council := rules.Rule{ID: 4, Name: "Council stadium", Topic: "local_news", Effect: rules.EffectOverride, Enabled: true, MinKeywords: 2,
		Keywords: []string{"city council", "stadium", "mayor"}}
	e := effectEngine(t, council)
	d := decide(t, s, e, title, body)
	m := e.Explain(title, body)[0]
	if d.Primary != "local_news" || d.Confidence != m.Score || !slices.Equal(topicsOf(d), []string{"local_news", "sports"}) {
		t.Errorf("override: %+v, want local_news primary at the rule's score %.3f, then sports", d, m.Score)
	}
	// Overriding to a topic of the model: it is primary once, at the rule's
	// score; the model's primary below SecondaryMin is dropped.
	shares := rules.Rule{ID: 6, Name: "Club shares", Topic: "business", Effect: rules.EffectOverride, Enabled: true, MinKeywords: 1,
		Keywords: []string{"stadium"}}
	d = decide(t, s, effectEngine(t, shares), title, body)
	if d.Primary != "business" || slices.Index(topicsOf(d), "business") != 0 || len(slices.DeleteFunc(topicsOf(d), func(x string) bool { return x != "business" })) != 1 {
		t.Errorf("override to a model topic: %+v, want business primary once", d)
	}
	// A model split three ways (a third each, below SecondaryMin): its
	// primary is not kept beside the override.
	weak := decide(t, s, e, "City council stadium", "A game, a match and a profit.")
	if !slices.Equal(topicsOf(weak), []string{"local_news"}) {
		t.Errorf("override beside a weak model primary: %+v, want local_news alone", weak)
	}
	// Rules alone: the override rule decides over a support rule of higher
	// priority, which stays beside it.
	rd := decide(t, nil, effectEngine(t, violentRule, council), "Man shot at stadium", "Police said a man was shot near the stadium; the city council met.")
	if rd.Primary != "local_news" || !slices.Equal(topicsOf(rd), []string{"local_news", "violent_crime"}) || !rd.Crime {
		t.Errorf("rules alone: %+v, want local_news then violent_crime", rd)
	}
}

// An exclude rule wins over an override rule: a vetoed topic is not brought
// back, and the override's topic is not primary; an override of another
// topic still applies.
func TestExcludeBeatsOverride(t *testing.T) {
	t.Parallel()
	s := mustLexicon(t, testLexicon)
	forceCrime := rules.Rule{ID: 3, Name: "Force crime", Topic: "violent_crime", Effect: rules.EffectOverride, Enabled: true, MinKeywords: 2,
		Keywords: []string{"shot", "attack", "killed"}}
	for name, model := range map[string]*Scorer{"rules alone": nil, "lexicon": s} {
		d := decide(t, model, effectEngine(t, forceCrime, sportsAndGames), matchTitle, matchBody)
		if d.Crime || d.Primary == "violent_crime" {
			t.Errorf("%s: %+v, want the veto to win over the override", name, d)
		}
		if d := decide(t, model, effectEngine(t, forceCrime), matchTitle, matchBody); d.Primary != "violent_crime" || !d.Crime {
			t.Errorf("%s, no veto: %+v, want the override to decide (else the test shows nothing)", name, d)
		}
	}
	e := effectEngine(t, forceCrime, sportsAndGames, rules.Rule{ID: 10, Name: "Derby news", Topic: "local_news",
		Effect: rules.EffectOverride, Enabled: true, MinKeywords: 1, Keywords: []string{"derby"}})
	if d := decide(t, s, e, matchTitle, matchBody); d.Primary != "local_news" || d.Crime {
		t.Errorf("a vetoed override and another: %+v, want local_news primary, no crime", d)
	}
	x := Explain(s, matchTitle, matchBody, e.Explain(matchTitle, matchBody), DecideConfig{})
	if !slices.Equal(x.Vetoed, []Veto{{Topic: rules.CrimeFamily, VetoedBy: "Sports and games context"}}) || x.OverriddenBy != "Derby news" {
		t.Errorf("explanation: vetoed %+v, overridden by %q", x.Vetoed, x.OverriddenBy)
	}
	effects := map[string]rules.Effect{}
	for _, r := range x.Rules {
		effects[r.Rule] = r.Effect
	}
	if effects["Sports and games context"] != rules.EffectExclude || effects["Derby news"] != rules.EffectOverride || effects["Force crime"] != rules.EffectOverride {
		t.Errorf("rule views' effects: %v", effects)
	}
}

// Support is the default effect: rules that say support decide exactly as
// rules that say nothing, with a model and without.
func TestSupportIsTheDefault(t *testing.T) {
	t.Parallel()
	plain := []rules.Rule{violentRule,
		{ID: 2, Name: "Traffic", Topic: "traffic", Enabled: true, MinKeywords: 2, Keywords: []string{"crash", "highway", "lanes"}},
		{ID: 3, Name: "Sports rule", Topic: "sports", Enabled: true, MinKeywords: 2, Keywords: []string{"rugby", "try", "league"}}}
	support := slices.Clone(plain)
	for i := range support {
		support[i].Effect = rules.EffectSupport
	}
	s := mustLexicon(t, testLexicon)
	for _, doc := range [][2]string{
		{matchTitle, matchBody}, {gameTitle, gameBody}, {crimeTitle, crimeBody},
		{"Crash", "A highway crash closed two lanes; police said one man was killed."},
		{"Rugby", "The league try of the season; shares in the club rose."},
	} {
		for _, model := range []*Scorer{nil, s} {
			a, b := decide(t, model, effectEngine(t, plain...), doc[0], doc[1]), decide(t, model, effectEngine(t, support...), doc[0], doc[1])
			if !slices.Equal(a.Topics, b.Topics) || a.Primary != b.Primary || a.Crime != b.Crime || a.Disputed != b.Disputed {
				t.Errorf("%q: no effect %+v, support %+v", doc[0], a, b)
			}
		}
	}
	x := Explain(s, crimeTitle, crimeBody, effectEngine(t, plain...).Explain(crimeTitle, crimeBody), DecideConfig{})
	if len(x.Vetoed) != 0 || x.OverriddenBy != "" || x.Rules[0].Effect != rules.EffectSupport {
		t.Errorf("support rules' explanation: %+v", x)
	}
}
