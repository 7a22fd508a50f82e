package rulestore_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
)

// FuzzValidate: any input is either refused with a ValidationError naming
// fields (ErrInvalid), or accepted, and then every keyword is valid UTF-8
// without NUL, normalizes to a non-empty form of at most MaxKeywordBytes,
// no two keywords normalize alike, and the rule alone is within the cost
// budget the watcher applies. Seeds: testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	f.Add("Violent crime", "violent_crime", "shooting\nstabbing", 0.3, 10)
	f.Add("x", "crime", "aa"+strings.Repeat("\ufdfa", 98), 0.5, 0)
	f.Fuzz(func(t *testing.T, name, topic, keywords string, minConfidence float64, priority int) {
		in := rulestore.Input{Name: name, Topic: topic, Keywords: strings.Split(keywords, "\n"),
			MinConfidence: minConfidence, Priority: priority, Enabled: true}
		out, err := rulestore.Validate(in)
		if err != nil {
			var ve *rulestore.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, rulestore.ErrInvalid) || len(ve.Problems) == 0 {
				t.Fatalf("Validate error %v is not a ValidationError with problems", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, kw := range out.Keywords {
			if !utf8.ValidString(kw) || strings.IndexByte(kw, 0) >= 0 {
				t.Fatalf("accepted keyword %q", kw)
			}
			n := rules.Normalize(kw)
			if n == "" || len(n) > rulestore.MaxKeywordBytes || seen[n] {
				t.Fatalf("accepted keyword %q normalizing to %q (%d bytes, duplicate %v)", kw, n, len(n), seen[n])
			}
			seen[n] = true
		}
		if !utf8.ValidString(out.Name) || strings.IndexByte(out.Name, 0) >= 0 || out.Name == "" {
			t.Fatalf("accepted name %q", out.Name)
		}
		r := rules.Rule{ID: 1, Name: out.Name, Topic: out.Topic, Keywords: out.Keywords, Enabled: true}
		if err := rulestore.CheckSetBudget([]rules.Rule{r}); err != nil &&
			!strings.Contains(err.Error(), "keyword bytes") { // one rule may still be over the whole set's bytes
			t.Fatalf("an accepted rule fails the per-rule budget: %v", err)
		}
	})
}

// FuzzNormalize: the engine's normalization, which the budget measures, is
// idempotent, yields lowercase-letter/digit words separated by single
// spaces, and never grows beyond the expansion the budget assumes (about
// 18 runes per input rune, U+FDFA). Seeds: testdata/fuzz/FuzzNormalize.
func FuzzNormalize(f *testing.F) {
	f.Add("Break-in at the CAFÉ")
	f.Add("\ufdfa")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			// Validate refuses invalid UTF-8 before normalizing, so the
			// budget never measures it (and Normalize is not idempotent on
			// it: "\xf4É" gives "é", then "e"; seed invalid_then_accent).
			return
		}
		n := rules.Normalize(s)
		if again := rules.Normalize(n); again != n {
			t.Fatalf("Normalize is not idempotent: %q -> %q -> %q", s, n, again)
		}
		if strings.HasPrefix(n, " ") || strings.HasSuffix(n, " ") || strings.Contains(n, "  ") {
			t.Fatalf("Normalize(%q) = %q has stray spaces", s, n)
		}
		if !utf8.ValidString(n) || strings.IndexByte(n, 0) >= 0 {
			t.Fatalf("Normalize(%q) = %q is not clean text", s, n)
		}
		if len(n) > 40*len(s)+1 {
			t.Fatalf("Normalize(%q) grew from %d to %d bytes", s, len(s), len(n))
		}
	})
}
