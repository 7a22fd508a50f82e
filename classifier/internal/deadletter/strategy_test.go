package deadletter_test

import (
	"context"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rawtest"
)

// A document refused at the door is listed with what the door decided:
// processing_strategy refuse, is_processable false and the reason, the URL
// class's for a URL class; an entry of any other failure carries none.
func TestDeadLetterEntryRecordsTheDoorsDecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := openQueue(t)
	raw := &domain.RawContent{RawDocument: rawtest.Doc("alpha", "zip", time.Now()), Index: "alpha_raw_content"}
	raw.URL = "https://alpha.test/files/archive.zip"
	err := admission.Admit(raw, admission.Limits{})
	if err == nil {
		t.Fatal("an archive URL was admitted")
	}
	refused := domain.NewDeadLetterEntry("zip", "alpha", "alpha_raw_content", pipeline.ErrUnprocessable.Error()+": "+err.Error(), domain.ErrorCodeValidation)
	failed := domain.NewDeadLetterEntry("slow", "alpha", "alpha_raw_content", "es timeout", domain.ErrorCodeESTimeout)
	for _, e := range []*domain.DeadLetterEntry{refused, failed} {
		if err := repo.Enqueue(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := repo.List(ctx, deadletter.Filter{}, nil, 10)
	if err != nil || len(entries) != 2 {
		t.Fatalf("list = %v, %v", entries, err)
	}
	for _, e := range entries {
		switch e.ContentID {
		case "zip":
			if e.ProcessingStrategy != "refuse" || e.IsProcessable == nil || *e.IsProcessable || e.FailureReason == "" {
				t.Errorf("refused entry = %s/%v/%q, want refuse, not processable, a reason", e.ProcessingStrategy, e.IsProcessable, e.FailureReason)
			}
			if a, _ := admission.AssessFailure(true, e.ErrorMessage); a.Class != admission.ClassUnsupportedExtension {
				t.Errorf("refused entry's class = %q, want unsupported_extension", a.Class)
			}
		case "slow":
			if e.ProcessingStrategy != "" || e.IsProcessable != nil || e.FailureReason != "" {
				t.Errorf("timed-out entry = %s/%v/%q, want none of the door's fields", e.ProcessingStrategy, e.IsProcessable, e.FailureReason)
			}
		}
	}
}
