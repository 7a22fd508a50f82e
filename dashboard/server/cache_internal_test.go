package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestSummaryCacheBounded: the cache holds at most its max answers, reuses
// a key's answer within the TTL and computes it again after.
func TestSummaryCacheBounded(t *testing.T) {
	t.Parallel()
	c := newSummaryCache(time.Hour, 3)
	var computed atomic.Int32
	compute := func() []byte { computed.Add(1); return []byte("x") }
	for i := range 10 {
		if _, err := c.get(context.Background(), fmt.Sprint(i), false, compute); err != nil {
			t.Fatal(err)
		}
		if n := c.len(); n > 3 {
			t.Fatalf("after %d keys the cache holds %d, want at most 3", i+1, n)
		}
	}
	before := computed.Load()
	_, _ = c.get(context.Background(), "9", false, compute)
	if computed.Load() != before {
		t.Errorf("a fresh answer was computed again")
	}
	_, _ = c.get(context.Background(), "9", true, compute)
	if computed.Load() != before+1 {
		t.Errorf("fresh was answered from the cache")
	}
	expired := newSummaryCache(0, 3)
	_, _ = expired.get(context.Background(), "a", false, compute)
	before = computed.Load()
	_, _ = expired.get(context.Background(), "a", false, compute)
	if computed.Load() != before+1 {
		t.Errorf("an expired answer was reused")
	}
}

func TestSumFamily(t *testing.T) {
	t.Parallel()
	text := "# HELP classifier_queue_depth q\n# TYPE classifier_queue_depth gauge\nclassifier_queue_depth{source=\"a\"} 3\n" +
		"classifier_queue_depth{source=\"b\",x=\"}\"} 4\nclassifier_queue_depth_other 100\nclassifier_active_workers 2 1700000000\n"
	if got := sumFamily(text, "classifier_queue_depth"); got != 7 {
		t.Errorf("queue depth = %v, want 7", got)
	}
	if got := sumFamily(text, "classifier_active_workers"); got != 2 {
		t.Errorf("active workers = %v, want 2", got)
	}
}
