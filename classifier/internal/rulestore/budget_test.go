package rulestore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/infrastructure/testenv"
)

// The rule: 100 characters, but 3,236 bytes normalized. Its length
// is checked on the normalized form and it is refused before it is stored.
func TestValidateMeasuresNormalizedKeywords(t *testing.T) {
	t.Parallel()
	in := validInput("expanding")
	in.Keywords = []string{"aa" + strings.Repeat("\ufdfa", 98)}
	_, err := rulestore.Validate(in)
	if !errors.Is(err, rulestore.ErrInvalid) || !strings.Contains(err.Error(), "bytes once normalized") {
		t.Fatalf("Validate = %v, want the normalized length refused", err)
	}
	in.Keywords = []string{strings.Repeat("a", 100)}
	if _, err := rulestore.Validate(in); err != nil {
		t.Fatalf("100 ASCII characters refused: %v", err)
	}
}

// randomKeywords returns keywords of n letters sharing no prefix, the worst
// case for a trie.
func randomKeywords(r *rand.Rand, count, n int) []string {
	out := make([]string, count)
	for i := range out {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		out[i] = string(b)
	}
	return out
}

// A create or an enable that would take the enabled set over the budget is
// refused with ErrOverBudget (a 400 through the API), and nothing is
// stored.
func TestRepositoryRefusesOverBudgetSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	r := rand.New(rand.NewPCG(7, 7))
	in := validInput("huge")
	in.Keywords = randomKeywords(r, rulestore.MaxKeywords, 100) // about 50 KiB normalized
	_, err := b.repo.Create(ctx, in)
	if !errors.Is(err, rulestore.ErrOverBudget) || !errors.Is(err, rulestore.ErrInvalid) {
		t.Fatalf("Create = %v, want ErrOverBudget", err)
	}
	in.Enabled = false
	disabled, err := b.repo.Create(ctx, in)
	if err != nil {
		t.Fatalf("a disabled rule costs the engine nothing, yet: %v", err)
	}
	if _, err := b.repo.SetEnabled(ctx, disabled.ID, true); !errors.Is(err, rulestore.ErrOverBudget) {
		t.Fatalf("SetEnabled = %v, want ErrOverBudget", err)
	}
	got, err := b.repo.Get(ctx, disabled.ID)
	if err != nil || got.Enabled {
		t.Fatalf("the over-budget rule was enabled: %+v %v", got, err)
	}
	rs, _, err := b.repo.LoadEnabled(ctx)
	if err != nil || rulestore.CheckSetBudget(rs) != nil {
		t.Fatalf("the stored enabled set is not within budget: %v / %v", err, rulestore.CheckSetBudget(rs))
	}
}

// A set over budget written straight into the table (as with psql) is
// refused by the watcher: the engine keeps the last good set, the refusal
// is counted (result over_budget), logged and reported by BudgetCheck for
// /ready, and nothing crashes. A replica that starts with that set stored
// loads the part within budget instead of failing to start.
func TestWatcherRefusesOverBudgetSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	r := startReplica(t, b, rulestore.WatcherConfig{PollInterval: 50 * time.Millisecond}, nil)
	good := r.watcher.Version()
	if err := r.watcher.BudgetCheck(ctx); err != nil {
		t.Fatalf("BudgetCheck with the default rules = %v", err)
	}
	kws := randomKeywords(rand.New(rand.NewPCG(1, 1)), 2*rulestore.MaxKeywords, 100)
	if _, err := b.db.ExecContext(ctx, `INSERT INTO classification_rules (name, topic, keywords, min_confidence, priority, enabled)
		VALUES ('psql-bomb', 'wildlife', $1, 0.3, 5, TRUE)`, pq.StringArray(kws)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, reloadDeadline, 5*time.Millisecond, "the over-budget set to be refused and counted", func() bool {
		return reloads(t, r.reader, rulestore.ReloadOverBudget) > 0
	})
	if r.watcher.Version() != good || r.engine.RuleCount() != len(defaultTopics) || hasTopic(r.engine, kws[0], "wildlife") {
		t.Fatalf("the engine did not keep the last good set: version %d (was %d), %d rules", r.watcher.Version(), good, r.engine.RuleCount())
	}
	if err := r.watcher.BudgetCheck(ctx); err == nil || !strings.Contains(err.Error(), "over budget") {
		t.Fatalf("BudgetCheck = %v, want the refusal for /ready", err)
	}

	// A second replica starting now loads the part within budget.
	second := startReplica(t, b, rulestore.WatcherConfig{PollInterval: 50 * time.Millisecond}, nil)
	if second.engine.RuleCount() != len(defaultTopics) {
		t.Errorf("a starting replica loaded %d rules, want the %d within budget", second.engine.RuleCount(), len(defaultTopics))
	}
	if err := second.watcher.BudgetCheck(ctx); err == nil || !strings.Contains(err.Error(), "left out rule ids") {
		t.Errorf("starting replica BudgetCheck = %v", err)
	}

	// Fixed with psql too: both replicas load it and the report clears.
	if _, err := b.db.ExecContext(ctx, `UPDATE classification_rules SET keywords = ARRAY['quokka'] WHERE name = 'psql-bomb'`); err != nil {
		t.Fatal(err)
	}
	waitAll(t, "fixed set", time.Now(), []replica{r, second}, func(e *rules.Engine) bool { return hasTopic(e, "quokka", "wildlife") })
	for i, rep := range []replica{r, second} {
		if err := rep.watcher.BudgetCheck(ctx); err != nil {
			t.Errorf("replica %d BudgetCheck after the fix = %v", i, err)
		}
	}
}

// phraseKeywords returns phrases of n bytes made of one-letter words in
// random order: the default engine puts phrases, not single words, into
// its automaton, one node per word, so these are its worst case per byte.
func phraseKeywords(r *rand.Rand, count, n int) []string {
	out := make([]string, count)
	for i := range out {
		b := make([]byte, 0, n)
		for len(b)+2 <= n {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = append(b, "abcdefghijklmnopqrstuvwxyz0123456789"[r.IntN(36)])
		}
		out[i] = string(b)
	}
	return out
}

// TestBudgetHeapAtLargestSet builds the default engine (cloudflare
// Aho-Corasick over word codes) from the largest set the budget allows, in
// its worst case (phrases of one-letter words sharing no prefix), and
// measures the heap
// it holds: it must stay well inside the classifier's 512 MiB container
// limit, twice over (a hot reload holds the old and new engines at once).
// Not parallel, so that the heap figure is this engine's alone.
func TestBudgetHeapAtLargestSet(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var set []rules.Rule
	total := 0
	for id := int64(1); ; id++ {
		kws := phraseKeywords(r, 100, 98) // at most 100 bytes each with padding
		cost := len(kws) * 100
		if total+cost > rulestore.MaxSetKeywordBytes {
			rest := (rulestore.MaxSetKeywordBytes - total) / 100
			if rest == 0 {
				break
			}
			kws, cost = kws[:rest], rest*100
		}
		set = append(set, rules.Rule{ID: id, Name: fmt.Sprintf("r%d", id), Topic: "t", Keywords: kws, MinConfidence: 0.3, MinKeywords: 1, Enabled: true})
		total += cost
	}
	if err := rulestore.CheckSetBudget(set); err != nil {
		t.Fatalf("the largest set is not within budget: %v", err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	engine, err := rules.NewEngine(rules.MatcherKindDefault, set)
	if err != nil {
		t.Fatal(err)
	}
	// The engine may build its matcher on first use: match once.
	if ms := engine.Match("", set[0].Keywords[0]); len(ms) == 0 {
		t.Fatal("the engine does not find a keyword of its set")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("default engine (%s) at the largest allowed set (%d rules, %d keyword bytes): heap %.1f MiB",
		engine.Kind(), len(set), total, float64(heap)/(1<<20))
	runtime.KeepAlive(engine)
	const containerLimit = 512 << 20
	if 2*heap > containerLimit*3/4 {
		t.Errorf("heap %d MiB: two engines (a hot reload) would take over 3/4 of the 512 MiB container", heap>>20)
	}
}
