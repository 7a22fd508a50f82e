package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/api"
)

// BenchmarkRuleEditReachesPlayground measures the hot-reload target: the
// time from a rule edit's answer (PUT /rules/:id) to the playground
// (POST /rules/test, the engine the workers use) classifying with the
// edited rule, against the real Postgres and its LISTEN/NOTIFY watcher.
// Each iteration makes 30 edits, each changing the rule's keyword and
// polling the playground every millisecond until the new keyword matches.
// Reported: p50_ms and max_ms of the edits (goal: 2 s).
func BenchmarkRuleEditReachesPlayground(b *testing.B) {
	bd := setup(b)
	res := bd.do(b, "POST", "/rules", map[string]any{"name": "Reload", "topic": "reload", "keywords": []string{"kw0"}, "min_confidence": 0})
	if res.status != http.StatusCreated {
		b.Fatalf("create rule: %d %s", res.status, res.body)
	}
	var rule struct{ ID int64 }
	res.decode(b, &rule)
	matches := func(text string) bool {
		var out api.TestResponse
		bd.do(b, "POST", "/rules/test", map[string]string{"text": text}).decode(b, &out)
		return slices.Contains(out.Topics, "reload")
	}
	const edits = 30
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N * edits {
		kw := fmt.Sprintf("kw%d", i+1)
		start := time.Now()
		res := bd.do(b, "PUT", fmt.Sprintf("/rules/%d", rule.ID), map[string]any{"name": "Reload", "topic": "reload", "keywords": []string{kw}, "min_confidence": 0})
		if res.status != http.StatusOK {
			b.Fatalf("update rule: %d %s", res.status, res.body)
		}
		deadline := start.Add(time.Minute)
		for !matches("a " + kw) {
			if time.Now().After(deadline) {
				b.Fatalf("edit %d not in the playground after a minute", i)
			}
			time.Sleep(time.Millisecond)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(took[len(took)/2]), "p50_ms")
	b.ReportMetric(ms(took[len(took)-1]), "max_ms")
}
