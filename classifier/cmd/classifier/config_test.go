package main

import (
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/infrastructure/config"
)

// required is the least environment loadConfig accepts.
func required() map[string]string {
	return map[string]string{
		"CLASSIFIER_DATABASE_URL":        "postgres://classifier:pw@127.0.0.1:5432/classifier?sslmode=disable",
		"CLASSIFIER_OUTBOX_DATABASE_URL": "postgres://classifier:pw@127.0.0.1:5432/publisher?sslmode=disable",
		"JWT_SECRET":                     "0123456789abcdef0123456789abcdef-test",
	}
}

// The urgent queue is on by default and CLASSIFIER_URGENT_QUEUE_ENABLED=false
// turns it off.
func TestUrgentQueueSwitch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  bool
	}{{"", true}, {"true", true}, {"false", false}} {
		env := required()
		if tc.value != "" {
			env["CLASSIFIER_URGENT_QUEUE_ENABLED"] = tc.value
		}
		cfg, err := loadConfig(config.NewFromMap(env))
		if err != nil {
			t.Fatalf("CLASSIFIER_URGENT_QUEUE_ENABLED=%q: %v", tc.value, err)
		}
		if cfg.UrgentEnabled != tc.want {
			t.Errorf("CLASSIFIER_URGENT_QUEUE_ENABLED=%q: urgent queue enabled %v, want %v", tc.value, cfg.UrgentEnabled, tc.want)
		}
	}
	if _, err := loadConfig(config.NewFromMap(map[string]string{"CLASSIFIER_URGENT_QUEUE_ENABLED": "sometimes"})); err == nil {
		t.Error("CLASSIFIER_URGENT_QUEUE_ENABLED=sometimes accepted")
	}
}

// CLASSIFIER_REPROCESS_PAGE_SIZE sizes a reprocess task's pages: 500 by
// default, 1..10000.
func TestReprocessPageSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  int
		ok    bool
	}{{"", 500, true}, {"5", 5, true}, {"10000", 10000, true}, {"0", 0, false}, {"10001", 0, false}, {"many", 0, false}} {
		env := required()
		if tc.value != "" {
			env["CLASSIFIER_REPROCESS_PAGE_SIZE"] = tc.value
		}
		cfg, err := loadConfig(config.NewFromMap(env))
		if (err == nil) != tc.ok {
			t.Errorf("CLASSIFIER_REPROCESS_PAGE_SIZE=%q: error %v, want accepted %v", tc.value, err, tc.ok)
			continue
		}
		if tc.ok && cfg.ReprocessPageSize != tc.want {
			t.Errorf("CLASSIFIER_REPROCESS_PAGE_SIZE=%q: page size %d, want %d", tc.value, cfg.ReprocessPageSize, tc.want)
		}
	}
}

// CLASSIFIER_USE_TRIE_ENGINE, the original design's rollout flag, is a
// deprecated alias of CLASSIFIER_RULE_MATCHER: false means naive and wins
// (the design's rollback, whatever the matcher is set to); true leaves the
// matcher to CLASSIFIER_RULE_MATCHER. Both set and disagreeing is accepted
// with a warning.
func TestUseTrieEngineIsAnAliasOfRuleMatcher(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		trie, matcher string
		want          rules.MatcherKind
		warn          bool
	}{
		{"", "", rules.MatcherAhoCorasick, false},
		{"", "token_index", rules.MatcherTokenIndex, false},
		{"", "naive", rules.MatcherNaive, false},
		{"true", "", rules.MatcherAhoCorasick, false},
		{"false", "", rules.MatcherNaive, false},
		{"true", "aho_corasick", rules.MatcherAhoCorasick, false},
		{"true", "token_index", rules.MatcherTokenIndex, false},
		{"false", "naive", rules.MatcherNaive, false},
		{"false", "aho_corasick", rules.MatcherNaive, true},
		{"false", "token_index", rules.MatcherNaive, true},
		{"true", "naive", rules.MatcherNaive, true},
	} {
		env := required()
		if tc.trie != "" {
			env["CLASSIFIER_USE_TRIE_ENGINE"] = tc.trie
		}
		if tc.matcher != "" {
			env["CLASSIFIER_RULE_MATCHER"] = tc.matcher
		}
		cfg, err := loadConfig(config.NewFromMap(env))
		if err != nil {
			t.Fatalf("USE_TRIE_ENGINE=%q RULE_MATCHER=%q: %v", tc.trie, tc.matcher, err)
		}
		if cfg.Matcher != tc.want || (len(cfg.Warnings) > 0) != tc.warn {
			t.Errorf("USE_TRIE_ENGINE=%q RULE_MATCHER=%q: matcher %s, warnings %v; want %s, a warning %v",
				tc.trie, tc.matcher, cfg.Matcher, cfg.Warnings, tc.want, tc.warn)
		}
	}
	env := required()
	env["CLASSIFIER_USE_TRIE_ENGINE"] = "sometimes"
	if _, err := loadConfig(config.NewFromMap(env)); err == nil {
		t.Error("CLASSIFIER_USE_TRIE_ENGINE=sometimes accepted")
	}
}

// One lease default: CLASSIFIER_CLAIM_LEASE unset is lease.LeaseDefault,
// the lease the lease table's claims hold, and the heartbeat must fit in
// half of whatever it is set to.
func TestClaimLeaseDefault(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(config.NewFromMap(required()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClaimLease != lease.LeaseDefault || lease.LeaseDefault != 15*time.Second {
		t.Errorf("claim lease %s, want lease.LeaseDefault (15s)", cfg.ClaimLease)
	}
	env := required()
	env["CLASSIFIER_CLAIM_LEASE"] = "6s"
	if _, err := loadConfig(config.NewFromMap(env)); err == nil {
		t.Error("a 6s lease with the 5s heartbeat was accepted")
	}
}
