package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/topicmodel"
)

// A rule's effect goes through the rule API (create, get, a PUT without it
// keeps it, 400 for an unknown one or the crime family without exclude)
// into the live engine: the playground and the dry run show the exclude
// rule vetoing crime in a match report the default crime rules flag.
func TestRuleEffectAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	title := "Rovers stun leaders as striker shot dead the derby"
	body := "Okafor shot from 25 yards, the attack never let up, and the second goal killed off the derby in front of the fans; " +
		"police escorted the supporters and a gunman in a mascot suit fired the starting pistol."
	var before api.TestResponse
	b.do(t, "POST", "/rules/test", map[string]string{"title": title, "body": body}).decode(t, &before)
	if !before.IsCrimeRelated || len(before.Vetoed) != 0 {
		t.Fatalf("the default rules on the match report: %+v; want it flagged (else the test shows nothing)", before)
	}
	for _, m := range before.Matches {
		if m.Effect != rules.EffectSupport {
			t.Errorf("default rule %s: effect %q, want support", m.RuleName, m.Effect)
		}
	}

	veto := map[string]any{"name": "Sports and games context", "topic": "crime", "effect": "exclude", "min_keywords": 2, "priority": 200,
		"keywords": []string{"striker", "derby", "fans", "goal", "league", "video game", "boss fight"}}
	res := b.do(t, "POST", "/rules", veto)
	if res.status != http.StatusCreated {
		t.Fatalf("create the exclude rule: %d %s", res.status, res.body)
	}
	var created rulestore.Rule
	res.decode(t, &created)
	if created.Effect != rules.EffectExclude || created.Topic != "crime" {
		t.Fatalf("created = %+v", created)
	}
	path := fmt.Sprintf("/rules/%d", created.ID)
	delete(veto, "effect")
	var updated rulestore.Rule
	if res = b.do(t, "PUT", path, veto); res.status != http.StatusOK {
		t.Fatalf("PUT without effect: %d %s", res.status, res.body)
	}
	res.decode(t, &updated)
	var got rulestore.Rule
	b.do(t, "GET", path, nil).decode(t, &got)
	if updated.Effect != rules.EffectExclude || got.Effect != rules.EffectExclude {
		t.Errorf("after a PUT without effect: PUT %q, GET %q; want exclude kept", updated.Effect, got.Effect)
	}

	waitFor(t, "the exclude rule in the playground", func() bool {
		var out api.TestResponse
		b.do(t, "POST", "/rules/test", map[string]string{"title": title, "body": body}).decode(t, &out)
		if len(out.Vetoed) == 0 {
			return false
		}
		if out.IsCrimeRelated || out.CrimeSubcategory != nil || slices.ContainsFunc(out.Topics, rules.IsCrimeSubcategory) ||
			!slices.Equal(out.Vetoed, []topicmodel.Veto{{Topic: "crime", VetoedBy: "Sports and games context"}}) {
			t.Errorf("playground with the veto: %+v", out)
		}
		i := slices.IndexFunc(out.Explanations, func(e api.RuleExplanation) bool { return e.RuleName == "Sports and games context" })
		if i < 0 || out.Explanations[i].Effect != rules.EffectExclude || !strings.Contains(out.Explanations[i].Reason, "every crime topic is vetoed") {
			t.Errorf("the exclude rule's explanation: %+v", out.Explanations)
		}
		return true
	})

	var dry api.ClassifyResponse
	res = b.do(t, "POST", "/classify", map[string]any{"url": "https://news.example.com/derby", "title": title, "raw_text": body, "og_type": "article"})
	res.decode(t, &dry)
	if res.status != http.StatusOK || dry.Document.IsCrimeRelated || dry.Explanation == nil ||
		!slices.Equal(dry.Explanation.Vetoed, []topicmodel.Veto{{Topic: "crime", VetoedBy: "Sports and games context"}}) {
		t.Fatalf("dry run: %d %s", res.status, res.body)
	}
	if i := slices.IndexFunc(dry.Explanation.Rules, func(r topicmodel.RuleView) bool { return r.Rule == "Sports and games context" }); i < 0 ||
		dry.Explanation.Rules[i].Effect != rules.EffectExclude {
		t.Errorf("dry run rules: %+v", dry.Explanation.Rules)
	}

	valid := func(k string, v any) map[string]any {
		m := map[string]any{"name": "Another", "topic": "wildlife", "keywords": []string{"quokka"}}
		m[k] = v
		return m
	}
	crimeWith := func(effect any) map[string]any {
		m := valid("topic", "crime")
		if effect != nil {
			m["effect"] = effect
		}
		return m
	}
	for _, tt := range []struct {
		name, method, path string
		body               any
		inMessage          string
	}{
		{"unknown effect", "POST", "/rules", valid("effect", "veto"), `effect: must be one of support, exclude or override (got "veto")`},
		{"empty effect", "POST", "/rules", valid("effect", ""), "effect: must be one of"},
		{"crime family as support", "POST", "/rules", crimeWith(nil), `topic: "crime" names the whole crime family and is allowed only with effect exclude (got support)`},
		{"crime family as override", "POST", "/rules", crimeWith("override"), "allowed only with effect exclude (got override)"},
		{"veto turned into support", "PUT", path, func() map[string]any { m := veto; m["effect"] = "support"; return m }(), "allowed only with effect exclude"},
		{"unknown effect on PUT", "PUT", path, valid("effect", "Exclude"), "effect: must be one of"},
	} {
		res := b.do(t, tt.method, tt.path, tt.body)
		if res.status != http.StatusBadRequest || res.errorCode() != "invalid_rule" || !strings.Contains(res.errorMessage(), tt.inMessage) {
			t.Errorf("%s: %d %s, want 400 invalid_rule with %q", tt.name, res.status, res.body, tt.inMessage)
		}
	}
}
