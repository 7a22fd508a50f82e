package rulestore_test

import (
	"slices"
	"testing"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

var defaultTopics = []string{
	"violent_crime", "organized_crime", "drug_crime", "property_crime", "criminal_justice",
	"politics", "business", "health", "technology", "traffic", "weather", "local_news", "sports", "entertainment",
}

// TestDefaultRulesAreValid checks the seeded rules pass the API's own
// validation, so an operator can save them back unchanged.
func TestDefaultRulesAreValid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	list, err := b.repo.List(testContext(t), rulestore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, r := range list {
		if r.Seed != rulestore.SeedDefaultRules {
			t.Errorf("rule %q seed = %q", r.Name, r.Seed)
		}
		if _, err := rulestore.Validate(rulestore.Input{Name: r.Name, Topic: r.Topic, Keywords: r.Keywords,
			MinConfidence: r.MinConfidence, Priority: r.Priority, Enabled: r.Enabled}); err != nil {
			t.Errorf("default rule %q: %v", r.Name, err)
		}
		if n := len(r.Keywords); n < 15 || n > 30 {
			t.Errorf("default rule %q has %d keywords, want 15-30", r.Name, n)
		}
		topics = append(topics, r.Topic)
	}
	if !slices.Equal(topics, defaultTopics) {
		t.Errorf("default topics by priority = %v, want %v", topics, defaultTopics)
	}
}

// TestDefaultRulesClassify runs sample crime and news texts through an
// engine loaded with the default rules, with every matcher.
func TestDefaultRulesClassify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	loaded, _, err := b.repo.LoadEnabled(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	samples := []struct {
		name, title, body string
		// wantFirst is the first topic; wantTopics must all be present;
		// wantAbsent must not be.
		wantFirst  string
		wantTopics []string
		wantAbsent []string
	}{
		{
			name:  "shooting",
			title: "Man shot dead in downtown shooting",
			body: "Police say a gunman opened fire outside a bar on Friday night. Witnesses heard gunfire " +
				"and one man was fatally shot. A second victim was stabbed during the fight. The homicide unit is investigating.",
			wantFirst: "violent_crime", wantTopics: []string{"violent_crime"},
		},
		{
			name:  "drug bust",
			title: "Fentanyl and cocaine seized in drug bust",
			body: "A months-long investigation into drug trafficking ended with three people charged. Officers seized " +
				"fentanyl, crack cocaine and methamphetamine with a street value of $2 million. They appeared in court on Monday and were arrested without incident; a bail hearing is set.",
			wantFirst: "drug_crime", wantTopics: []string{"drug_crime", "criminal_justice"},
		},
		{
			name:  "break-ins",
			title: "String of break-ins on the east side",
			body: "Residents report a burglary wave: thieves broke into garages and stole bikes, and a catalytic converter " +
				"was stolen from a truck. Police urge people to report any theft.",
			wantFirst: "property_crime", wantTopics: []string{"property_crime"}, wantAbsent: []string{"violent_crime"},
		},
		{
			name:      "gang extortion",
			title:     "Extortion ring linked to biker gang",
			body:      "Investigators say the Hells Angels ran money laundering and extortion through a network of businesses; organized crime experts call it a criminal organization.",
			wantFirst: "organized_crime", wantTopics: []string{"organized_crime"},
		},
		{
			name:      "sentencing",
			title:     "Former coach sentenced after trial",
			body:      "A judge sentenced the man to four years in prison after a jury found him guilty. The crown attorney had asked for six; the defence lawyer says they will appeal the conviction.",
			wantFirst: "criminal_justice", wantTopics: []string{"criminal_justice"},
		},
		{
			name:      "hockey",
			title:     "Leafs win in overtime",
			body:      "The NHL club scored twice in the third period and won in overtime. The goaltender made 38 saves and the head coach praised the power play as the playoffs approach.",
			wantFirst: "sports", wantTopics: []string{"sports"}, wantAbsent: []string{"violent_crime", "criminal_justice"},
		},
		{
			name:      "snowstorm",
			title:     "Snowstorm to bring 30 centimetres of snow",
			body:      "Environment Canada issued a weather warning ahead of the snowstorm. The forecast calls for heavy snowfall, strong gusts and a wind chill of -30 overnight; expect highway closures.",
			wantFirst: "weather", wantTopics: []string{"weather"},
		},
		{
			name:       "council",
			title:      "City council approves new bylaw",
			body:       "At Tuesday's council meeting the mayor and councillors voted on a zoning bylaw; residents of the downtown neighbourhood spoke at city hall about property taxes.",
			wantTopics: []string{"local_news"},
		},
		{
			name:      "rates",
			title:     "Bank of Canada holds interest rates",
			body:      "The central bank held its key rate as inflation eased. Economists say the economy slowed, the TSX rose and investors expect a recession to be avoided.",
			wantFirst: "business", wantTopics: []string{"business"},
		},
		{
			name:      "election",
			title:     "Premier calls early election",
			body:      "The premier asked for the legislature to be dissolved. Opposition parties began their campaign; the NDP and Conservatives named candidates as polls tighten ahead of election day.",
			wantFirst: "politics", wantTopics: []string{"politics"},
		},
		{
			name:      "outbreak",
			title:     "Flu outbreak fills hospital",
			body:      "The medical officer of health says the influenza outbreak has filled the emergency room. Patients face long wait times and nurses are stretched; public health urges vaccination.",
			wantFirst: "health", wantTopics: []string{"health"},
		},
		{
			name:      "ransomware",
			title:     "Ransomware attack hits city software vendor",
			body:      "Hackers behind the cyberattack encrypted servers; the data breach exposed records. Cybersecurity experts say artificial intelligence tools made the attack faster.",
			wantFirst: "technology", wantTopics: []string{"technology"},
		},
		{
			name:      "crash",
			title:     "Highway 401 closed after multi-vehicle collision",
			body:      "OPP say a tractor trailer and two cars were involved in the crash; a detour is in place and traffic delays are expected for motorists through the afternoon.",
			wantFirst: "traffic", wantTopics: []string{"traffic"},
		},
		{
			name:      "film festival",
			title:     "Local actress stars in festival premiere",
			body:      "The film opens the music festival weekend with a red carpet premiere; the director says the movie will reach Netflix next year after its box office run.",
			wantFirst: "entertainment", wantTopics: []string{"entertainment"},
		},
		{
			// Substrings of keywords must not match: begun (gun), problem
			// (rob), shooting stars is still shooting but alone is one hit.
			name:       "no crime in substrings",
			title:      "Work has begun on the garden",
			body:       "The problem with assaulting... no: gardeners discussed the robustness of tomatoes and theftless sheds.",
			wantAbsent: []string{"violent_crime", "property_crime", "drug_crime", "organized_crime", "criminal_justice"},
		},
	}
	for _, kind := range []rules.MatcherKind{rules.MatcherAhoCorasick, rules.MatcherTokenIndex, rules.MatcherNaive} {
		engine, err := rules.NewEngine(kind, loaded)
		if err != nil {
			t.Fatalf("NewEngine(%s): %v", kind, err)
		}
		if engine.RuleCount() != len(defaultTopics) {
			t.Fatalf("%s: RuleCount = %d, want %d", kind, engine.RuleCount(), len(defaultTopics))
		}
		for _, s := range samples {
			t.Run(string(kind)+"/"+s.name, func(t *testing.T) {
				t.Parallel()
				matches := engine.Match(s.title, s.body)
				var topics []string
				for _, m := range matches {
					topics = append(topics, m.Rule.Topic)
				}
				if s.wantFirst != "" && (len(topics) == 0 || topics[0] != s.wantFirst) {
					t.Errorf("topics = %v, want %s first", topics, s.wantFirst)
				}
				for _, want := range s.wantTopics {
					if !slices.Contains(topics, want) {
						t.Errorf("topics = %v, want %s among them", topics, want)
					}
				}
				for _, absent := range s.wantAbsent {
					if slices.Contains(topics, absent) {
						t.Errorf("topics = %v, must not contain %s", topics, absent)
					}
				}
			})
		}
	}
}

// TestDefaultRulesDown checks that migration 005's down removes exactly the
// seeded rows, leaving API-created rules alone, and that up seeds again.
func TestDefaultRulesDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	mine, err := b.repo.Create(ctx, validInput("operator rule"))
	if err != nil {
		t.Fatal(err)
	}
	mg, err := postgres.NewMigrator(b.dsn, migrations.FS, ".", testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if v, _, err := mg.Version(); err != nil || v != 5 {
		t.Fatalf("migration version = %d, %v; this test assumes 005 is the last migration", v, err)
	}
	if err := mg.Down(1); err != nil {
		t.Fatalf("down 005: %v", err)
	}
	list, err := b.repo.List(ctx, rulestore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != mine.ID {
		t.Fatalf("after down: %d rules (%v), want only the operator's", len(list), list)
	}
	if err := mg.Up(); err != nil {
		t.Fatalf("up again: %v", err)
	}
	list, err = b.repo.List(ctx, rulestore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(defaultTopics)+1 {
		t.Errorf("after up: %d rules, want %d", len(list), len(defaultTopics)+1)
	}
}
