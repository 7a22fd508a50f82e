package rulestore_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
)

func effect(e rules.Effect) *rules.Effect { return &e }

func TestValidate(t *testing.T) {
	t.Parallel()
	many := make([]string, rulestore.MaxKeywords+1)
	for i := range many {
		many[i] = "kw" + strings.Repeat("x", i%50) + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
	}
	tests := []struct {
		name   string
		modify func(*rulestore.Input)
		// wantFields are the fields the error must name, in order; none
		// means the input is valid.
		wantFields []string
		wantInMsg  string
	}{
		{name: "valid", modify: func(*rulestore.Input) {}},
		{name: "valid bounds", modify: func(in *rulestore.Input) {
			in.MinConfidence, in.Priority = 1, rulestore.MaxPriority
		}},
		{name: "empty name", modify: func(in *rulestore.Input) { in.Name = "  " }, wantFields: []string{"name"}, wantInMsg: "name: is required"},
		{name: "long name", modify: func(in *rulestore.Input) { in.Name = strings.Repeat("é", 101) }, wantFields: []string{"name"}, wantInMsg: "at most 100"},
		{name: "empty topic", modify: func(in *rulestore.Input) { in.Topic = "" }, wantFields: []string{"topic"}},
		{name: "topic format", modify: func(in *rulestore.Input) { in.Topic = "Violent Crime" }, wantFields: []string{"topic"}, wantInMsg: "snake_case"},
		{name: "topic leading digit", modify: func(in *rulestore.Input) { in.Topic = "1crime" }, wantFields: []string{"topic"}},
		{name: "topic too long", modify: func(in *rulestore.Input) { in.Topic = strings.Repeat("a", 65) }, wantFields: []string{"topic"}},
		{name: "min_confidence negative", modify: func(in *rulestore.Input) { in.MinConfidence = -0.1 }, wantFields: []string{"min_confidence"}, wantInMsg: "between 0 and 1"},
		{name: "min_confidence above one", modify: func(in *rulestore.Input) { in.MinConfidence = 1.01 }, wantFields: []string{"min_confidence"}},
		{name: "min_confidence NaN", modify: func(in *rulestore.Input) { in.MinConfidence = math.NaN() }, wantFields: []string{"min_confidence"}},
		{name: "min_keywords up to the keywords", modify: func(in *rulestore.Input) { n := len(in.Keywords); in.MinKeywords = &n }},
		{name: "min_keywords above the keywords", modify: func(in *rulestore.Input) { n := len(in.Keywords) + 1; in.MinKeywords = &n }, wantFields: []string{"min_keywords"}, wantInMsg: "number of keywords"},
		{name: "min_keywords negative", modify: func(in *rulestore.Input) { n := -1; in.MinKeywords = &n }, wantFields: []string{"min_keywords"}},
		{name: "effect exclude", modify: func(in *rulestore.Input) { in.Effect = effect(rules.EffectExclude) }},
		{name: "effect override", modify: func(in *rulestore.Input) { in.Effect = effect(rules.EffectOverride) }},
		{name: "effect unknown", modify: func(in *rulestore.Input) { in.Effect = effect("veto") }, wantFields: []string{"effect"}, wantInMsg: `effect: must be one of support, exclude or override (got "veto")`},
		{name: "effect empty", modify: func(in *rulestore.Input) { in.Effect = effect("") }, wantFields: []string{"effect"}},
		{name: "crime family exclude", modify: func(in *rulestore.Input) { in.Topic, in.Effect = "crime", effect(rules.EffectExclude) }},
		{name: "crime family support", modify: func(in *rulestore.Input) { in.Topic, in.Effect = "crime", effect(rules.EffectSupport) }, wantFields: []string{"topic"}, wantInMsg: "allowed only with effect exclude (got support)"},
		{name: "crime family override", modify: func(in *rulestore.Input) { in.Topic, in.Effect = " crime ", effect(rules.EffectOverride) }, wantFields: []string{"topic"}, wantInMsg: "(got override)"},
		{name: "priority out of range", modify: func(in *rulestore.Input) { in.Priority = 5000 }, wantFields: []string{"priority"}},
		{name: "no keywords", modify: func(in *rulestore.Input) { in.Keywords = nil }, wantFields: []string{"keywords"}, wantInMsg: "at least one"},
		{name: "empty keyword", modify: func(in *rulestore.Input) { in.Keywords = []string{"gun", " "} }, wantFields: []string{"keywords[1]"}, wantInMsg: "keywords[1]: is empty"},
		{name: "punctuation keyword", modify: func(in *rulestore.Input) { in.Keywords = []string{"!!!", "gun"} }, wantFields: []string{"keywords[0]"}, wantInMsg: "no letters or digits"},
		{name: "duplicate keyword exact", modify: func(in *rulestore.Input) { in.Keywords = []string{"gun", "knife", "gun"} }, wantFields: []string{"keywords[2]"}, wantInMsg: "duplicates keywords[0]"},
		{name: "duplicate keyword after normalization", modify: func(in *rulestore.Input) {
			in.Keywords = []string{"Break-in", "theft", "break in", "CAFÉ", "cafe"}
		}, wantFields: []string{"keywords[2]", "keywords[4]"}, wantInMsg: `"break in" duplicates keywords[0] "Break-in"`},
		{name: "keyword too long", modify: func(in *rulestore.Input) { in.Keywords = []string{strings.Repeat("a", 101)} }, wantFields: []string{"keywords[0]"}, wantInMsg: "at most 100"},
		{name: "too many keywords", modify: func(in *rulestore.Input) { in.Keywords = many }, wantFields: []string{"keywords"}, wantInMsg: "at most 500"},
		{name: "several problems", modify: func(in *rulestore.Input) {
			in.Name, in.Topic, in.MinConfidence = "", "", 2
		}, wantFields: []string{"name", "topic", "min_confidence"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validInput("rule")
			tt.modify(&in)
			_, err := rulestore.Validate(in)
			if len(tt.wantFields) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, rulestore.ErrInvalid) {
				t.Fatalf("Validate error = %v, want ErrInvalid", err)
			}
			var verr *rulestore.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error %T is not a *ValidationError", err)
			}
			var fields []string
			for _, p := range verr.Problems {
				fields = append(fields, p.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tt.wantFields, ",") {
				t.Errorf("fields = %v, want %v (%v)", fields, tt.wantFields, err)
			}
			if tt.wantInMsg != "" && !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Errorf("message %q does not contain %q", err, tt.wantInMsg)
			}
		})
	}
}

func TestValidateTrims(t *testing.T) {
	t.Parallel()
	in := validInput("  spaced  ")
	in.Topic = " sports "
	in.Keywords = []string{"  hockey ", "goal"}
	out, err := rulestore.Validate(in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "spaced" || out.Topic != "sports" || out.Keywords[0] != "hockey" {
		t.Errorf("Validate did not trim: %+v", out)
	}
}

func TestValidateCapsProblems(t *testing.T) {
	t.Parallel()
	in := validInput("r")
	in.Keywords = make([]string, 50) // fifty empty keywords
	_, err := rulestore.Validate(in)
	var verr *rulestore.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error = %v", err)
	}
	if len(verr.Problems) != 11 || !strings.Contains(err.Error(), "and 40 more problems") {
		t.Errorf("got %d problems: %v", len(verr.Problems), err)
	}
}
