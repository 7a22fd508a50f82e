package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/openapi"
)

// One threshold decides a rule, and the rule API, the playground and the
// engine agree on which: a rule created with min_keywords says
// threshold min_keywords and matches on that count whatever its
// min_confidence; one created without says min_confidence and is decided
// by its score. min_keywords is in the OpenAPI document's request schema.
func TestRuleThresholdIsOneRegime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	kws := []string{"quokka", "wombat", "numbat", "bilby"}
	byCount := map[string]any{"name": "By count", "topic": "marsupials_count", "keywords": kws, "min_keywords": 2, "min_confidence": 0.99}
	byScore := map[string]any{"name": "By score", "topic": "marsupials_score", "keywords": kws, "min_confidence": 0.99}
	thresholds := map[string]string{}
	for _, in := range []map[string]any{byCount, byScore} {
		res := b.do(t, "POST", "/rules", in)
		if res.status != http.StatusCreated {
			t.Fatalf("create %v: %d %s", in["topic"], res.status, res.body)
		}
		var got map[string]any
		res.decode(t, &got)
		thresholds[in["topic"].(string)] = got["threshold"].(string)
		id := int64(got["id"].(float64))
		var again map[string]any
		b.do(t, "GET", "/rules/"+jsonNumber(id), nil).decode(t, &again)
		if again["threshold"] != got["threshold"] {
			t.Errorf("GET threshold %v, POST %v", again["threshold"], got["threshold"])
		}
	}
	if thresholds["marsupials_count"] != "min_keywords" || thresholds["marsupials_score"] != "min_confidence" {
		t.Fatalf("thresholds = %v, want min_keywords for the rule with min_keywords, min_confidence for the other", thresholds)
	}
	// Two of four keywords: the count rule matches (2 >= min_keywords,
	// min_confidence 0.99 not consulted), the score rule does not.
	waitFor(t, "both rules in the playground", func() bool {
		var out api.TestResponse
		b.do(t, "POST", "/rules/test", map[string]string{"text": "A quokka met a wombat."}).decode(t, &out)
		seen := 0
		for _, e := range out.Explanations {
			if want, ok := thresholds[e.Topic]; ok {
				seen++
				if e.Threshold != want || e.Matched != (want == "min_keywords") {
					t.Errorf("%s explanation: threshold %s matched %v; the rule says %s", e.Topic, e.Threshold, e.Matched, want)
				}
			}
		}
		return seen == 2 && slices.Contains(out.Topics, "marsupials_count") && !slices.Contains(out.Topics, "marsupials_score")
	})

	// Every field the rule API accepts is in the request schema.
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc.JSON(), &spec); err != nil {
		t.Fatal(err)
	}
	for _, f := range api.RuleRequestFields() {
		if _, ok := spec.Components.Schemas["RuleRequest"].Properties[f]; !ok {
			t.Errorf("the rule API accepts %q, the OpenAPI RuleRequest does not list it", f)
		}
	}
	if _, ok := spec.Components.Schemas["Rule"].Properties["threshold"]; !ok {
		t.Error("the OpenAPI Rule does not list threshold")
	}
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }
