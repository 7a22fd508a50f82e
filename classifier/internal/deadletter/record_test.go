package deadletter_test

import (
	"context"
	"strings"
	"testing"

	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
)

// Two documents whose ids differ only by what storing removes (NUL bytes,
// or the tail past the column's length) are one stored key: Record keeps
// one entry for them instead of sending an upsert that touches one row
// twice, which Postgres refuses as a whole (SQLSTATE 21000) and which once
// opened the Postgres breaker of a whole replica.
func TestRecordDeduplicatesOnTheStoredKey(t *testing.T) {
	t.Parallel()
	q := setupQueue(t, deadletter.RepositoryConfig{})
	long := strings.Repeat("x", 600)
	failures := []domain.DeadLetterEntry{
		{ContentID: "poi\x00son", SourceName: "alpha", IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeValidation, ErrorMessage: "id: NUL byte at byte 3"},
		{ContentID: "healthy", SourceName: "alpha", IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeRulePanic, ErrorMessage: "panic"},
		{ContentID: "poison\x00", SourceName: "alpha", IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeValidation, ErrorMessage: "id: NUL byte at byte 6"},
		{ContentID: long + "a", SourceName: "alpha", IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeValidation, ErrorMessage: "too long"},
		{ContentID: long + "b", SourceName: "alpha", IndexName: "alpha_raw_content", ErrorCode: domain.ErrorCodeValidation, ErrorMessage: "too long"},
	}
	recs, err := q.repo.EnqueueBatch(context.Background(), failures)
	if err != nil {
		t.Fatalf("Record: %v", err)
	}
	if len(recs) != 3 {
		t.Errorf("Record returned %d entries, want 3 (poison, healthy, the long id)", len(recs))
	}
	var msg string
	if err := q.db.QueryRow(`SELECT error_message FROM dead_letter_queue WHERE content_id = 'poison'`).Scan(&msg); err != nil {
		t.Fatalf("the NUL twins' entry: %v", err)
	}
	if msg != "id: NUL byte at byte 3" {
		t.Errorf("the twins' entry holds %q, want the first twin's failure", msg)
	}
	var n int
	if err := q.db.QueryRow(`SELECT COUNT(*) FROM dead_letter_queue`).Scan(&n); err != nil || n != 3 {
		t.Errorf("entries = %d (%v), want 3", n, err)
	}
}
