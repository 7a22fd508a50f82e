package main

import (
	"testing"

	"github.com/north-cloud/infrastructure/config"
)

// CLASSIFIER_MATCHER_ROLLOUT_PERCENT is 0 by default (shadow mode), takes
// 0..100, and needs the candidate matcher it sends documents to.
func TestMatcherRolloutPercent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		percent, shadow string
		want            int
		ok              bool
	}{
		{"", "", 0, true},
		{"", "token_index", 0, true},
		{"10", "token_index", 10, true},
		{"100", "naive", 100, true},
		{"10", "", 0, false},
		{"101", "token_index", 0, false},
		{"-1", "token_index", 0, false},
	} {
		env := required()
		if tc.percent != "" {
			env["CLASSIFIER_MATCHER_ROLLOUT_PERCENT"] = tc.percent
		}
		if tc.shadow != "" {
			env["CLASSIFIER_SHADOW_MATCHER"] = tc.shadow
		}
		cfg, err := loadConfig(config.NewFromMap(env))
		if (err == nil) != tc.ok {
			t.Errorf("percent %q, shadow %q: error %v, want ok=%v", tc.percent, tc.shadow, err, tc.ok)
			continue
		}
		if err == nil && cfg.MatcherRolloutPercent != tc.want {
			t.Errorf("percent %q: got %d, want %d", tc.percent, cfg.MatcherRolloutPercent, tc.want)
		}
	}
}
