package rulestore

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/north-cloud/classifier/internal/rules"
)

// The cost budget of the rule set, measured on the normalized keywords (the
// form the engine indexes), not on what a client typed: one character can
// become many under normalization (U+FDFA is 1 character, 3 bytes, and 33
// bytes normalized), and the default engine's memory follows normalized
// bytes. The default engine (cloudflare/ahocorasick over word codes) puts
// every phrase into its automaton, one trie node (two 256-pointer tables,
// about 4.2 KB) per word, so its worst case is phrases of one-letter words
// sharing no prefix: at MaxSetKeywordBytes that is about 81 MiB of heap
// (TestBudgetHeapAtLargestSet), and a hot reload, which holds the old and
// the new engine at once, about 160 MiB: inside the classifier's 512 MiB
// container limit (docker-compose.yml) with room for the rest. The shipped
// default rules use under half of it.
const (
	// MaxKeywordBytes is the longest keyword, in normalized bytes.
	MaxKeywordBytes = 256
	// MaxRules is the most rules the table may hold, enabled or not.
	MaxRules = 1000
	// MaxSetKeywordBytes is the most keyword bytes of all enabled rules
	// together, each keyword counted normalized plus its two padding
	// spaces.
	MaxSetKeywordBytes = 40 << 10
)

// ErrOverBudget is wrapped by every budget refusal; it also matches
// ErrInvalid (a 400 through the API).
var ErrOverBudget = errors.New("rule set over budget")

// budgetError is a refusal of the whole set: it matches ErrOverBudget and
// ErrInvalid.
type budgetError struct{ msg string }

func (e *budgetError) Error() string { return ErrOverBudget.Error() + ": " + e.msg }

func (e *budgetError) Is(target error) bool { return target == ErrOverBudget || target == ErrInvalid }

// ruleCost is the keyword bytes of one rule, counted as the engine counts
// them (distinct normalized keywords).
func ruleCost(keywords []string) int {
	seen := make(map[string]bool, len(keywords))
	total := 0
	for _, kw := range keywords {
		n := rules.Normalize(kw)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		total += len(n) + 2
	}
	return total
}

// checkRuleBudget checks one rule alone: keywords per rule and bytes per
// keyword, normalized.
func checkRuleBudget(r rules.Rule) error {
	if len(r.Keywords) > MaxKeywords {
		return &budgetError{fmt.Sprintf("rule %d (%s) has %d keywords, at most %d are allowed", r.ID, r.Name, len(r.Keywords), MaxKeywords)}
	}
	for i, kw := range r.Keywords {
		if n := len(rules.Normalize(kw)); n > MaxKeywordBytes {
			return &budgetError{fmt.Sprintf("rule %d (%s) keywords[%d] is %d bytes normalized, at most %d are allowed", r.ID, r.Name, i, n, MaxKeywordBytes)}
		}
	}
	return nil
}

// CheckSetBudget checks a set of enabled rules, as the engine would load
// it, against the budget: every rule alone, then the rule count and the
// keyword bytes of the whole set. The watcher refuses a stored set that
// fails it.
func CheckSetBudget(rs []rules.Rule) error {
	if len(rs) > MaxRules {
		return &budgetError{fmt.Sprintf("%d enabled rules, at most %d are allowed", len(rs), MaxRules)}
	}
	total := 0
	for _, r := range rs {
		if err := checkRuleBudget(r); err != nil {
			return err
		}
		total += ruleCost(r.Keywords)
	}
	if total > MaxSetKeywordBytes {
		return &budgetError{fmt.Sprintf("the enabled rules hold %d keyword bytes (normalized), at most %d are allowed", total, MaxSetKeywordBytes)}
	}
	return nil
}

// FitBudget returns the largest part of rs within the budget, taking rules
// by priority (highest first, then id), and the ids of the rules left out.
// A replica that starts with an over-budget set stored loads this part
// instead of crash-looping.
func FitBudget(rs []rules.Rule) (kept []rules.Rule, dropped []int64) {
	order := slices.Clone(rs)
	slices.SortStableFunc(order, func(a, b rules.Rule) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
	})
	total := 0
	for _, r := range order {
		c := ruleCost(r.Keywords)
		if len(kept) >= MaxRules || checkRuleBudget(r) != nil || total+c > MaxSetKeywordBytes {
			dropped = append(dropped, r.ID)
			continue
		}
		total += c
		kept = append(kept, r)
	}
	slices.SortFunc(kept, func(a, b rules.Rule) int { return cmp.Compare(a.ID, b.ID) })
	return kept, dropped
}
