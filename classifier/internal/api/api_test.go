package api_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/infrastructure/testenv"
)

func TestRequiresToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	routes := []struct{ method, path string }{
		{"GET", "/rules"}, {"GET", "/rules/1"}, {"POST", "/rules"}, {"PUT", "/rules/1"},
		{"DELETE", "/rules/1"}, {"POST", "/rules/1/enable"}, {"POST", "/rules/1/disable"},
		{"POST", "/rules/test"}, {"POST", "/classify"},
	}
	for _, r := range routes {
		for _, token := range []string{"", "not-a-jwt"} {
			res := do(t, b.url, token, r.method, r.path, `{}`)
			if res.status != http.StatusUnauthorized || res.errorCode() != "unauthorized" {
				t.Errorf("%s %s with token %q: %d %s, want 401", r.method, r.path, token, res.status, res.body)
			}
		}
	}
}

func TestRulesCRUD(t *testing.T) {
	t.Parallel()
	b := setup(t)

	res := b.do(t, "POST", "/rules", map[string]any{
		"name": "Marsupials", "topic": "wildlife", "keywords": []string{"quokka", "wombat", "kangaroo"},
		"priority": 5,
	})
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	var created rulestore.Rule
	res.decode(t, &created)
	if created.ID == 0 || !created.Enabled || created.MinConfidence != rulestore.MinConfidenceDefault || created.Priority != 5 {
		t.Errorf("created = %+v (defaults: enabled, min_confidence %v)", created, rulestore.MinConfidenceDefault)
	}
	path := fmt.Sprintf("/rules/%d", created.ID)

	res = b.do(t, "GET", path, nil)
	var got rulestore.Rule
	res.decode(t, &got)
	if res.status != http.StatusOK || got.Name != "Marsupials" || !slices.Equal(got.Keywords, created.Keywords) {
		t.Errorf("get: %d %+v", res.status, got)
	}

	res = b.do(t, "PUT", path, map[string]any{
		"name": "Marsupials", "topic": "wildlife", "keywords": []string{"quokka"}, "min_confidence": 0.1, "enabled": false,
	})
	var updated rulestore.Rule
	res.decode(t, &updated)
	if res.status != http.StatusOK || updated.Enabled || updated.MinConfidence != 0.1 || len(updated.Keywords) != 1 || updated.Priority != 0 {
		t.Errorf("put: %d %+v", res.status, updated)
	}

	res = b.do(t, "POST", path+"/enable", nil)
	var enabled rulestore.Rule
	res.decode(t, &enabled)
	if res.status != http.StatusOK || !enabled.Enabled {
		t.Errorf("enable: %d %s", res.status, res.body)
	}
	res = b.do(t, "POST", path+"/disable", nil)
	var disabled rulestore.Rule
	res.decode(t, &disabled)
	if res.status != http.StatusOK || disabled.Enabled {
		t.Errorf("disable: %d %s", res.status, res.body)
	}

	var list struct {
		Rules []rulestore.Rule `json:"rules"`
		Total int              `json:"total"`
	}
	b.do(t, "GET", "/rules?topic=wildlife", nil).decode(t, &list)
	if list.Total != 1 || list.Rules[0].ID != created.ID {
		t.Errorf("list by topic: %+v", list)
	}
	b.do(t, "GET", "/rules?enabled=false", nil).decode(t, &list)
	if list.Total != 1 || list.Rules[0].ID != created.ID {
		t.Errorf("list disabled: %+v", list)
	}
	b.do(t, "GET", "/rules?enabled=true", nil).decode(t, &list)
	if list.Total != 18 {
		t.Errorf("list enabled: %d rules, want the 18 defaults", list.Total)
	}
	b.do(t, "GET", "/rules", nil).decode(t, &list)
	if list.Total != 19 {
		t.Errorf("list all: %d rules, want 19", list.Total)
	}

	if res = b.do(t, "DELETE", path, nil); res.status != http.StatusNoContent {
		t.Errorf("delete: %d %s", res.status, res.body)
	}
	if res = b.do(t, "GET", path, nil); res.status != http.StatusNotFound || res.errorCode() != "not_found" {
		t.Errorf("get after delete: %d %s", res.status, res.body)
	}
}

func TestRulesErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	valid := func() map[string]any {
		return map[string]any{"name": "Rule", "topic": "wildlife", "keywords": []string{"quokka"}}
	}
	with := func(k string, v any) map[string]any {
		m := valid()
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	if res := b.do(t, "POST", "/rules", valid()); res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}

	tests := []struct {
		name, method, path string
		body               any
		status             int
		code               string
		// inMessage must appear in the error message (the field's name).
		inMessage string
	}{
		{"duplicate name", "POST", "/rules", valid(), 409, "conflict", "name already exists"},
		{"missing name", "POST", "/rules", with("name", nil), 400, "invalid_rule", "name: is required"},
		{"missing keywords", "POST", "/rules", with("keywords", nil), 400, "invalid_rule", "keywords: is required"},
		{"empty keywords", "POST", "/rules", with("keywords", []string{}), 400, "invalid_rule", "keywords: at least one"},
		{"empty keyword", "POST", "/rules", with("keywords", []string{"a", ""}), 400, "invalid_rule", "keywords[1]: is empty"},
		{"duplicate keywords", "POST", "/rules", with("keywords", []string{"Quokka", "quokka!"}), 400, "invalid_rule", "keywords[1]"},
		{"keyword too long", "POST", "/rules", with("keywords", []string{strings.Repeat("k", 101)}), 400, "invalid_rule", "keywords[0]: must be at most 100"},
		{"too many keywords", "POST", "/rules", with("keywords", manyKeywords(501)), 400, "invalid_rule", "at most 500 keywords"},
		{"min_confidence above 1", "POST", "/rules", with("min_confidence", 1.5), 400, "invalid_rule", "min_confidence: must be between 0 and 1"},
		{"min_confidence negative", "POST", "/rules", with("min_confidence", -1), 400, "invalid_rule", "min_confidence"},
		{"bad topic", "POST", "/rules", with("topic", "Wild Life"), 400, "invalid_rule", "topic: must be snake_case"},
		{"wrong type", "POST", "/rules", with("keywords", "quokka"), 400, "invalid_json", "keywords: must be an array"},
		{"unknown field", "POST", "/rules", with("keyword", []string{"x"}), 400, "invalid_json", `unknown field "keyword"`},
		{"malformed JSON", "POST", "/rules", `{"name":`, 400, "invalid_json", "malformed JSON"},
		{"empty body", "POST", "/rules", nil, 400, "invalid_json", "must be a JSON object"},
		{"null body", "POST", "/rules", "null", 400, "invalid_json", "not null"},
		{"trailing data", "POST", "/rules", `{"name":"a","topic":"t","keywords":["x"]} {"name":"b"}`, 400, "invalid_json", "trailing data"},
		{"bad id", "GET", "/rules/abc", nil, 400, "bad_request", "id: must be a positive integer"},
		{"negative id", "DELETE", "/rules/-3", nil, 400, "bad_request", "id"},
		{"get missing", "GET", "/rules/999999", nil, 404, "not_found", ""},
		{"put missing", "PUT", "/rules/999999", with("name", "Other"), 404, "not_found", ""},
		{"delete missing", "DELETE", "/rules/999999", nil, 404, "not_found", ""},
		{"enable missing", "POST", "/rules/999999/enable", nil, 404, "not_found", ""},
		{"bad enabled filter", "GET", "/rules?enabled=maybe", nil, 400, "bad_request", "enabled: must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.do(t, tt.method, tt.path, tt.body)
			if res.status != tt.status || res.errorCode() != tt.code {
				t.Fatalf("%d %s, want %d %s", res.status, res.body, tt.status, tt.code)
			}
			if !strings.Contains(res.errorMessage(), tt.inMessage) {
				t.Errorf("message %q does not contain %q", res.errorMessage(), tt.inMessage)
			}
		})
	}
}

func manyKeywords(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("keyword%d", i)
	}
	return out
}

// TestRulesUnavailable checks that a database that cannot be reached is a
// 503, not a 500.
func TestRulesUnavailable(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("postgres", "postgres://nobody:nothing@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	engine, err := rules.NewEngine(rules.MatcherNaive, nil)
	if err != nil {
		t.Fatal(err)
	}
	url, token := serve(t, api.Deps{Store: rulestore.NewRepository(db), Engine: engine, Pipeline: nopPipeline{}, Logger: testenv.Logger(t)})
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/rules", nil},
		{"GET", "/rules/1", nil},
		{"POST", "/rules", map[string]any{"name": "x", "topic": "y", "keywords": []string{"z"}}},
		{"DELETE", "/rules/1", nil},
		{"POST", "/rules/1/disable", nil},
	} {
		res := do(t, url, token, r.method, r.path, r.body)
		if res.status != http.StatusServiceUnavailable || res.errorCode() != "database_unavailable" {
			t.Errorf("%s %s: %d %s, want 503", r.method, r.path, res.status, res.body)
		}
	}
}

type nopPipeline struct{}

func (nopPipeline) Classify(*domain.RawContent) (*domain.ClassifiedContent, error) {
	return &domain.ClassifiedContent{}, nil
}

func TestRegisterValidatesDeps(t *testing.T) {
	t.Parallel()
	if err := api.Register(nil, api.Deps{}); err == nil || !strings.Contains(err.Error(), "Store is required") {
		t.Errorf("Register with no deps: %v", err)
	}
}

// waitFor polls the API until cond holds. Its deadline only ends a test
// that would otherwise hang: the hot-reload target (2 s from a rule edit to
// the playground) is measured by BenchmarkRuleEditReachesPlayground, not
// asserted here, where a loaded machine can stretch any window.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, 10*time.Millisecond, what, cond)
}
