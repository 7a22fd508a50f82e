package rules

import "testing"

// A Text's keys are those of Engine.Key with stemming on and off, asked in
// either order, and matching through them answers as Match does.
func TestTextKeysAreTheEngineKeys(t *testing.T) {
	t.Parallel()
	title, body := "Police ARRESTED suspects", "The councillors were voting on budgets; élections nearing."
	rs := []Rule{{ID: 1, Topic: "crime", Keywords: []string{"arrest", "police"}, MinKeywords: 2, Enabled: true}}
	for _, stem := range []bool{true, false} {
		e, err := NewEngineWithOptions(Options{Stemming: stem}, rs)
		if err != nil {
			t.Fatal(err)
		}
		for _, first := range []bool{true, false} {
			text := NewText(title, body)
			text.Keys(first)
			kt, kb := text.Keys(stem)
			if kt != e.Key(title) || kb != e.Key(body) {
				t.Errorf("stem=%v after %v: keys %q, %q; engine keys %q, %q", stem, first, kt, kb, e.Key(title), e.Key(body))
			}
			if got, want := e.ExplainKeyed(text), e.Explain(title, body); len(got) != len(want) || (len(got) > 0 && got[0].Matched != want[0].Matched) {
				t.Errorf("stem=%v: ExplainKeyed %+v, Explain %+v", stem, got, want)
			}
		}
	}
}
