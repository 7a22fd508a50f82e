package claim

import (
	"slices"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
)

// A claim is suspect, to be verified before its result is written, when a
// renewal found it taken over, or when it was last known to hold longer
// ago than the lease (a paused process may have lost it unnoticed).
// Fresh claims and untracked documents are not; taking a document forgets it.
func TestRegistrySuspect(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now := start
	r := NewRegistry()
	r.now = func() time.Time { return now }
	claimed := func(id string) *domain.RawContent {
		at := start
		return &domain.RawContent{RawDocument: contentindex.RawDocument{ID: id, ClaimedAt: &at}}
	}
	fresh, stale, lost, untracked := claimed("fresh"), claimed("stale"), claimed("lost"), claimed("untracked")
	r.Add(fresh, stale, lost)

	if got := r.Suspect(15*time.Second, fresh, stale, lost, untracked); len(got) != 0 {
		t.Fatalf("right after the claim: suspect %v, want none", ids(got))
	}
	now = start.Add(20 * time.Second)
	// A renewal confirms fresh, finds lost taken over, and leaves stale
	// unanswered.
	rn := r.begin(now)
	r.end(rn, map[*domain.RawContent]time.Time{fresh: now}, []*domain.RawContent{lost})
	got := ids(r.Suspect(15*time.Second, fresh, stale, lost, untracked))
	if want := []string{"lost", "stale"}; !slices.Equal(got, want) {
		t.Fatalf("20 s later: suspect %v, want %v", got, want)
	}
	if got := ids(r.Suspect(0, fresh, stale, lost)); !slices.Equal(got, []string{"lost"}) {
		t.Errorf("with no lease: suspect %v, want only the lost", got)
	}
	r.Take(lost, stale)
	if got := r.Suspect(15*time.Second, fresh, stale, lost); len(got) != 0 {
		t.Errorf("after Take: suspect %v, want none", ids(got))
	}
}

func ids(docs []*domain.RawContent) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	slices.Sort(out)
	return out
}
