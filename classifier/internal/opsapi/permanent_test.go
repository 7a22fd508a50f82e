package opsapi

import (
	"context"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
)

// An entry made permanent by three identical failures is listed with its
// reason (the answer checked against the OpenAPI document), found by the
// permanent filter, counted in the stats, and re-queued by that filter.
func TestPermanentEntriesThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	ctx := context.Background()
	for i := range 3 {
		if _, err := b.db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW()`); err != nil {
			t.Fatal(err)
		}
		msg := "classification panicked: assignment to entry in nil map (attempt " + string(rune('1'+i)) + ")"
		if _, err := b.dlq.EnqueueBatch(ctx, []domain.DeadLetterEntry{{ContentID: "poison", SourceName: "beta", IndexName: "beta_raw_content",
			ErrorCode: domain.ErrorCodeRulePanic, ErrorMessage: msg}}); err != nil {
			t.Fatal(err)
		}
	}

	var p struct {
		Entries []domain.DeadLetterEntry `json:"entries"`
	}
	if code := b.do(t, "GET", "/api/v1/dlq?permanent=true", nil, &p); code != 200 || len(p.Entries) != 1 {
		t.Fatalf("GET /dlq?permanent=true = %d, %d entries; want the poison document alone", code, len(p.Entries))
	}
	e := p.Entries[0]
	if e.ContentID != "poison" || !e.Permanent || !e.Exhausted || e.FailureStreak != 3 || e.PermanentReason == nil ||
		!strings.HasPrefix(*e.PermanentReason, "failed 3 times in a row with RULE_PANIC: ") {
		t.Fatalf("permanent entry = %+v", e)
	}
	b.do(t, "GET", "/api/v1/dlq?permanent=false", nil, &p)
	if len(p.Entries) != 7 {
		t.Errorf("GET /dlq?permanent=false = %d entries, want the 7 others", len(p.Entries))
	}
	var s deadletter.Stats
	if code := b.do(t, "GET", "/api/v1/dlq/stats", nil, &s); code != 200 || s.Permanent != 1 {
		t.Errorf("stats = %d %+v, want 1 permanent", code, s)
	}
	if code, ec := b.doRaw(t, "GET", "/api/v1/dlq?permanent=sometimes", ""); code != 400 || ec != "bad_request" {
		t.Errorf("permanent=sometimes = %d %s, want 400 bad_request", code, ec)
	}
	var resp bulkResult
	if code := b.do(t, "POST", "/api/v1/dlq/requeue", map[string]any{"permanent": true}, &resp); code != 200 || resp.Requeued != 1 {
		t.Fatalf("requeue permanent = %d %v, want 1", code, resp)
	}
	b.do(t, "GET", "/api/v1/dlq?content_id=poison", nil, &p)
	if len(p.Entries) != 1 || p.Entries[0].Permanent || p.Entries[0].Exhausted || p.Entries[0].MaxRetries != domain.MaxRetriesDefault {
		t.Errorf("requeued entry = %+v, want retryable with %d retries", p.Entries, domain.MaxRetriesDefault)
	}
}
