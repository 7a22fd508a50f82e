package rulestore_test

import (
	"database/sql"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/migrations"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

// defaultTopics are the topics of the default rules, by priority then name.
var defaultTopics = []string{
	"violent_crime", "organized_crime", "drug_crime", "property_crime", "criminal_justice",
	"politics", "business", "energy", "health", "science", "technology", "traffic", "weather", "world",
	"education", "local_news", "sports", "entertainment",
}

// topics005 are the topics of migration 005's rules, by priority then name.
var topics005 = []string{
	"violent_crime", "organized_crime", "drug_crime", "property_crime", "criminal_justice",
	"politics", "business", "health", "technology", "traffic", "weather", "local_news", "sports", "entertainment",
}

// migrationsUpTo is the embedded migrations numbered up to n.
func migrationsUpTo(t *testing.T, n int) fs.FS {
	t.Helper()
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		if v, err := strconv.Atoi(num); err == nil && v <= n {
			data, err := fs.ReadFile(migrations.FS, e.Name())
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = &fstest.MapFile{Data: data}
		}
	}
	return out
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
		if r.Seed != rulestore.SeedDefaultRulesV2 {
			t.Errorf("rule %q seed = %q, want %q", r.Name, r.Seed, rulestore.SeedDefaultRulesV2)
		}
		if _, err := rulestore.Validate(rulestore.Input{Name: r.Name, Topic: r.Topic, Keywords: r.Keywords,
			MinConfidence: r.MinConfidence, Priority: r.Priority, Enabled: r.Enabled, MinKeywords: &r.MinKeywords}); err != nil {
			t.Errorf("default rule %q: %v", r.Name, err)
		}
		if n := len(r.Keywords); n < 30 || n > 100 {
			t.Errorf("default rule %q has %d keywords, want 30-100", r.Name, n)
		}
		if r.MinKeywords != 2 {
			t.Errorf("default rule %q has min_keywords %d, want 2", r.Name, r.MinKeywords)
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
			// The examples: both were "0 matching rules" with 005.
			name:       "oil prices",
			title:      "",
			body:       "Oil prices fell as the economy slowed.",
			wantFirst:  "energy",
			wantTopics: []string{"energy"},
		},
		{
			name:       "petroleum reserve",
			title:      "U.S. to draw on strategic petroleum reserve",
			body:       "The Energy Department will release 20 million barrels of crude oil from the strategic petroleum reserve to calm gasoline prices.",
			wantFirst:  "energy",
			wantTopics: []string{"energy"},
		},
		{
			name:       "acquisition, inflected",
			title:      "Northwind acquires Contoso",
			body:       "Northwind said it acquired the software maker in a deal valued at $2 billion; Contoso shareholders approved the takeover.",
			wantTopics: []string{"business"},
		},
		{
			name:       "ceasefire",
			title:      "UN Security Council backs ceasefire",
			body:       "Diplomats said the truce would let humanitarian aid reach refugees.",
			wantFirst:  "world",
			wantTopics: []string{"world"},
		},
		{
			name:       "telescope",
			title:      "Astronomers find water vapour on distant planet",
			body:       "Researchers using a space telescope published the result in a scientific journal.",
			wantFirst:  "science",
			wantTopics: []string{"science"},
		},
		{
			name:       "tuition",
			title:      "University freezes tuition",
			body:       "Students and teachers welcomed the decision; the college will follow.",
			wantFirst:  "education",
			wantTopics: []string{"education"},
		},
		{
			// Hard negatives: crime words in other stories.
			name:       "shooting star",
			title:      "Shooting star lights up the sky",
			body:       "Astronomers say the meteor was a fragment of an asteroid.",
			wantTopics: []string{"science"},
			wantAbsent: []string{"violent_crime", "criminal_justice"},
		},
		{
			name:       "drug approval",
			title:      "Regulator approves new drug",
			body:       "The drug approval follows clinical trials in which patients improved.",
			wantTopics: []string{"health"},
			wantAbsent: []string{"drug_crime", "criminal_justice"},
		},
		{
			name:       "political crime novel",
			title:      "Political crime novel wins prize",
			body:       "The novelist's book about a murder in a prime minister's office won the literary award.",
			wantTopics: []string{"entertainment"},
			wantAbsent: []string{"violent_crime", "criminal_justice", "politics"},
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
		engine, err := rules.NewEngine(kind, loaded) // the shipped defaults: stemming, min_keywords
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

// TestDefaultRulesDown checks that migration 007's down restores 005's
// rules and removes 007's, that 005's down then removes exactly the seeded
// rows, leaving API-created rules alone, and that up seeds them again.
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
	// Later migrations are taken down first: this test is about 007 and 005.
	v, _, err := mg.Version()
	for ; err == nil && v > 7; v, _, err = mg.Version() {
		if err := mg.Down(1); err != nil {
			t.Fatalf("down from %d: %v", v, err)
		}
	}
	if err != nil || v != 7 {
		t.Fatalf("migration version = %d, %v; want 007 before taking it down", v, err)
	}
	if err := mg.Down(1); err != nil {
		t.Fatalf("down 007: %v", err)
	}
	list, err := b.repo.List(ctx, rulestore.Filter{})
	if err == nil {
		t.Fatalf("List after down 007 read min_keywords, which 007's down drops: %d rules", len(list))
	}
	var topics []string
	rows, err := b.db.QueryContext(ctx, `SELECT topic, seed FROM classification_rules WHERE seed IS NOT NULL ORDER BY priority DESC, name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var topic, seed string
		if err := rows.Scan(&topic, &seed); err != nil {
			t.Fatal(err)
		}
		if seed != rulestore.SeedDefaultRules {
			t.Errorf("after down 007: %s has seed %q", topic, seed)
		}
		topics = append(topics, topic)
	}
	_ = rows.Close()
	if !slices.Equal(topics, topics005) {
		t.Errorf("after down 007: topics %v, want 005's %v", topics, topics005)
	}
	if err := mg.Down(1); err != nil { // 006 when present, else 005
		t.Fatalf("down: %v", err)
	}
	for v, _, _ := mg.Version(); v > 4; v, _, _ = mg.Version() {
		if err := mg.Down(1); err != nil {
			t.Fatalf("down to 4: %v", err)
		}
	}
	var n int
	if err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM classification_rules WHERE id <> $1`, mine.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after down 005: %d other rules (%v), want only the operator's", n, err)
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

// TestDefaultRulesUpgradeKeepsEdits runs 007 over an installation at 005
// whose operator edited, disabled and deleted default rules: 007 upgrades
// only the untouched ones, leaves the others as the operator left them, and
// its down reverts only what it changed.
func TestDefaultRulesUpgradeKeepsEdits(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	log := testenv.Logger(t)
	if err := postgres.MigrateUp(dsn, migrationsUpTo(t, 5), ".", log); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := testContext(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The operator's changes at 005: Business gets a keyword, Sports is
	// disabled, Weather is deleted, and a rule of their own takes the name
	// of a rule 007 adds.
	exec(`UPDATE classification_rules SET keywords = keywords || '{crude oil}'::text[] WHERE name = 'Business'`)
	exec(`UPDATE classification_rules SET enabled = FALSE WHERE name = 'Sports'`)
	exec(`DELETE FROM classification_rules WHERE name = 'Weather'`)
	exec(`INSERT INTO classification_rules (name, topic, keywords) VALUES ('Science', 'my_science', '{lab}')`)
	type row struct {
		Topic, Seed string
		Keywords    int
		Enabled     bool
	}
	snapshot := func() map[string]row {
		t.Helper()
		rows, err := db.QueryContext(ctx, `SELECT name, topic, COALESCE(seed, ''), cardinality(keywords), enabled FROM classification_rules`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]row{}
		for rows.Next() {
			var name string
			var r row
			if err := rows.Scan(&name, &r.Topic, &r.Seed, &r.Keywords, &r.Enabled); err != nil {
				t.Fatal(err)
			}
			out[name] = r
		}
		return out
	}
	before := snapshot()

	mg, err := postgres.NewMigrator(dsn, migrationsUpTo(t, 7), ".", log)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Up(); err != nil {
		t.Fatalf("up to 007: %v", err)
	}
	after := snapshot()
	for _, name := range []string{"Business", "Sports", "Science"} {
		if after[name] != before[name] {
			t.Errorf("%s: the operator's rule changed: %+v -> %+v", name, before[name], after[name])
		}
	}
	if _, ok := after["Weather"]; ok {
		t.Error("Weather, deleted by the operator, came back")
	}
	for _, name := range []string{"Violent crime", "Politics", "Local news", "Entertainment"} {
		if r := after[name]; r.Seed != rulestore.SeedDefaultRulesV2 || r.Keywords <= before[name].Keywords {
			t.Errorf("%s: not upgraded: %+v (was %+v)", name, r, before[name])
		}
	}
	for _, name := range []string{"Energy and commodities", "World news", "Education"} {
		if r := after[name]; r.Seed != rulestore.SeedDefaultRulesV2 || !r.Enabled {
			t.Errorf("%s: not added: %+v", name, r)
		}
	}
	// The upgraded rules carry their min_keywords. (Read here with SQL: the
	// repository reads the columns of the latest schema, which 007 lacks.)
	rows, err := db.QueryContext(ctx, `SELECT name, min_keywords FROM classification_rules WHERE enabled`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var minKeywords int
		if err := rows.Scan(&name, &minKeywords); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 2, false: 0}[after[name].Seed == rulestore.SeedDefaultRulesV2]; minKeywords != want {
			t.Errorf("%s: min_keywords %d, want %d", name, minKeywords, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()

	// An operator edit after 007 survives its down (handed back to 005).
	exec(`UPDATE classification_rules SET priority = 99 WHERE name = 'Politics'`)
	if err := mg.Down(1); err != nil {
		t.Fatalf("down 007: %v", err)
	}
	down := snapshot()
	for name, r := range before {
		if name == "Politics" {
			continue
		}
		if down[name] != r {
			t.Errorf("after down 007: %s = %+v, want %+v as at 005", name, down[name], r)
		}
	}
	if len(down) != len(before) {
		t.Errorf("after down 007: %d rules, want %d", len(down), len(before))
	}
	var priority int
	if err := db.QueryRowContext(ctx, `SELECT priority FROM classification_rules WHERE name = 'Politics' AND seed = $1`,
		rulestore.SeedDefaultRules).Scan(&priority); err != nil || priority != 99 {
		t.Errorf("Politics edited after 007: priority %d, %v; want 99 under seed 005", priority, err)
	}
}
