package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/north-cloud/classifier/internal/api"
)

func TestRulesTestEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	title := "Man shot dead in downtown shooting"
	body := "Police say a gunman opened fire; witnesses heard gunfire. A second victim was stabbed. The café’s owner called it a homicide."
	res := b.do(t, "POST", "/rules/test", map[string]string{"title": title, "body": body})
	if res.status != http.StatusOK {
		t.Fatalf("%d %s", res.status, res.body)
	}
	var out api.TestResponse
	res.decode(t, &out)
	if len(out.Matches) == 0 || out.Matches[0].Topic != "violent_crime" {
		t.Fatalf("matches = %+v", out.Matches)
	}
	if !out.IsCrimeRelated || out.CrimeSubcategory == nil || *out.CrimeSubcategory != "violent_crime" || out.Topics[0] != "violent_crime" {
		t.Errorf("crime fields = %v %v, topics %v", out.IsCrimeRelated, out.CrimeSubcategory, out.Topics)
	}
	if out.RulesVersion == nil || *out.RulesVersion != b.watcher.Version() {
		t.Errorf("rules_version = %v, want %d", out.RulesVersion, b.watcher.Version())
	}
	m := out.Matches[0]
	if m.RuleID == 0 || m.RuleName != "Violent crime" || m.Score <= 0 || m.Coverage <= 0 || m.UniqueMatches != len(m.MatchedKeywords) {
		t.Errorf("match = %+v", m)
	}
	// With stemming (the default) "stabbing" and "stabbed" are one keyword of
	// the rule, reported as the rule first spells it.
	for _, kw := range []string{"shooting", "shot dead", "gunman", "gunfire", "stabbing", "homicide"} {
		if !slices.Contains(m.MatchedKeywords, kw) {
			t.Errorf("matched keywords %v lack %q", m.MatchedKeywords, kw)
		}
	}
	// Every highlight selects its text in the field, in bytes and in
	// UTF-16 units (the body holds a curly apostrophe and an accent).
	fields := map[string]string{"title": title, "body": body}
	seen := map[string]bool{}
	for _, h := range m.Highlights {
		text := fields[h.Field]
		if text[h.ByteStart:h.ByteEnd] != h.Text {
			t.Errorf("highlight %+v: bytes select %q", h, text[h.ByteStart:h.ByteEnd])
		}
		units := utf16.Encode([]rune(text))
		if got := string(utf16.Decode(units[h.Start:h.End])); got != h.Text {
			t.Errorf("highlight %+v: UTF-16 offsets select %q", h, got)
		}
		seen[h.Keyword+"@"+h.Field] = true
	}
	for _, want := range []string{"shot dead@title", "shooting@title", "gunman@body", "homicide@body", "stabbing@body"} {
		if !seen[want] {
			t.Errorf("no highlight %s in %+v", want, m.Highlights)
		}
	}
}

func TestRulesTestEndpointText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var out api.TestResponse
	res := b.do(t, "POST", "/rules/test", map[string]string{"text": "Work has begun on the problem garden."})
	res.decode(t, &out)
	if res.status != http.StatusOK || len(out.Matches) != 0 || out.IsCrimeRelated || out.Topics == nil {
		t.Errorf("%d %+v: nothing should match", res.status, out)
	}

	res = b.do(t, "POST", "/rules/test", map[string]string{"text": "Environment Canada forecast: freezing rain, then a snowstorm."})
	res.decode(t, &out)
	if len(out.Matches) != 1 || out.Matches[0].Topic != "weather" || out.IsCrimeRelated {
		t.Fatalf("%+v", out)
	}
	for _, h := range out.Matches[0].Highlights {
		if h.Field != "text" {
			t.Errorf("highlight field %q, want text", h.Field)
		}
	}

	for _, tt := range []struct {
		name string
		body any
	}{
		{"empty object", map[string]string{}},
		{"blank text", map[string]string{"text": "  "}},
		{"text and title", map[string]string{"text": "a", "title": "b"}},
		{"unknown field", map[string]string{"content": "a"}},
	} {
		if res := b.do(t, "POST", "/rules/test", tt.body); res.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", tt.name, res.status, res.body)
		}
	}
}

// TestRulesTestEndpointExplains checks the explanations: every rule that
// found a keyword, matched or not, with its keywords, score and threshold,
// and what it lacked.
func TestRulesTestEndpointExplains(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var out api.TestResponse
	res := b.do(t, "POST", "/rules/test", map[string]string{"text": "Oil prices fell as the economy slowed."})
	if res.status != http.StatusOK {
		t.Fatalf("%d %s", res.status, res.body)
	}
	res.decode(t, &out)
	if out.Engine == nil || !out.Engine.Stemming || out.Engine.Scoring != "min_keywords" {
		t.Errorf("engine = %+v, want the defaults (stemming, min_keywords)", out.Engine)
	}
	if !slices.Equal(out.Topics, []string{"energy"}) {
		t.Errorf("topics = %v, want energy", out.Topics)
	}
	byTopic := map[string]api.RuleExplanation{}
	for _, e := range out.Explanations {
		byTopic[e.Topic] = e
	}
	energy, business := byTopic["energy"], byTopic["business"]
	if !energy.Matched || energy.KeywordsMissing != 0 || !slices.Contains(energy.KeywordsFound, "oil prices") {
		t.Errorf("energy explanation = %+v", energy)
	}
	if business.Matched || business.Threshold != "min_keywords" || business.MinKeywords != 2 || business.KeywordsNeeded != 2 ||
		business.KeywordsMissing != 1 || !slices.Equal(business.KeywordsFound, []string{"economy"}) || business.Score <= 0 ||
		len(business.Highlights) != 1 || business.Highlights[0].Text != "economy" || !strings.Contains(business.Reason, "1 more distinct keyword") {
		t.Errorf("business explanation = %+v", business)
	}
	// Matches are exactly the matched explanations.
	var matched int
	for _, e := range out.Explanations {
		if e.Matched {
			matched++
		}
	}
	if matched != len(out.Matches) {
		t.Errorf("%d matched explanations, %d matches", matched, len(out.Matches))
	}

	// A rule under the spec's threshold says what score it missed.
	rule := map[string]any{"name": "Spec rule", "topic": "markets", "min_confidence": 0.5,
		"keywords": []string{"bonds", "yields", "treasury", "coupon", "maturity", "auction"}}
	if res := b.do(t, "POST", "/rules", rule); res.status != http.StatusCreated {
		t.Fatalf("%d %s", res.status, res.body)
	}
	waitFor(t, "spec rule", func() bool {
		var out api.TestResponse
		b.do(t, "POST", "/rules/test", map[string]string{"text": "Treasury yields rose."}).decode(t, &out)
		for _, e := range out.Explanations {
			if e.Topic == "markets" {
				return !e.Matched && e.Threshold == "min_confidence" && e.KeywordsNeeded == 3 && e.KeywordsMissing == 1 &&
					strings.Contains(e.Reason, "< min_confidence 0.50")
			}
		}
		return false
	})
}

// TestRuleEditReachesPlayground checks the whole loop: a rule created,
// changed and deleted through the API changes what /rules/test answers,
// with no restart, within 2 seconds.
func TestRuleEditReachesPlayground(t *testing.T) {
	t.Parallel()
	b := setup(t)
	topics := func(text string) []string {
		var out api.TestResponse
		b.do(t, "POST", "/rules/test", map[string]string{"text": text}).decode(t, &out)
		return out.Topics
	}
	res := b.do(t, "POST", "/rules", map[string]any{"name": "Marsupials", "topic": "wildlife", "keywords": []string{"quokka"}, "min_confidence": 0})
	if res.status != http.StatusCreated {
		t.Fatalf("%d %s", res.status, res.body)
	}
	var rule struct{ ID int64 }
	res.decode(t, &rule)
	waitFor(t, "created rule", func() bool { return slices.Contains(topics("a quokka"), "wildlife") })

	b.do(t, "PUT", fmt.Sprintf("/rules/%d", rule.ID), map[string]any{"name": "Marsupials", "topic": "wildlife", "keywords": []string{"wombat"}, "min_confidence": 0})
	waitFor(t, "updated rule", func() bool {
		return slices.Contains(topics("a wombat"), "wildlife") && !slices.Contains(topics("a quokka"), "wildlife")
	})

	b.do(t, "DELETE", fmt.Sprintf("/rules/%d", rule.ID), nil)
	waitFor(t, "deleted rule", func() bool { return !slices.Contains(topics("a wombat"), "wildlife") })
}
