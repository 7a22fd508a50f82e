package poller

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// disableRefresh stops the scheduled refreshes of index, so a search sees
// only what an explicit refresh made visible.
func (h *harness) disableRefresh(t *testing.T, index string) {
	t.Helper()
	res, err := h.es.Indices.PutSettings(strings.NewReader(`{"index.refresh_interval": "-1"}`), h.es.Indices.PutSettings.WithIndex(index))
	check(t, "disable refresh of "+index, res, err)
}

// searchCount counts the documents of index in status, as a search sees them.
func (h *harness) searchCount(t *testing.T, index, status string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": map[string]any{"term": map[string]any{"classification_status": status}}})
	res, err := h.es.Count(h.es.Count.WithIndex(index), h.es.Count.WithBody(bytes.NewReader(body)))
	if err := esclient.CheckResponse("count "+index, res, err); err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		Count int `json:"count"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		t.Fatal(err)
	}
	return parsed.Count
}

// Claims are not refreshed: a search still sees the claimed documents as
// pending. The poller does not offer them again while it remembers them,
// and once it has forgotten them the stale copies' claims are lost on their
// version, never won a second time.
func TestJustClaimedDocumentsAreNotClaimedTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idx := h.rawIndex(t, "unseen", false)
	ids := h.addDocs(t, idx, "u", 6, time.Now().Add(-time.Hour))
	h.disableRefresh(t, idx)

	p := h.poller(t, Config{IndexPattern: idx, BatchSize: 3})
	manual := clock.NewManual(time.Now())
	p.now = manual.Now
	ctx := context.Background()
	for i, want := range []int{3, 3, 0} {
		if n, err := p.PollOnce(ctx); err != nil || n != want {
			t.Fatalf("poll %d = %d, %v; want %d won", i+1, n, err, want)
		}
	}
	if got := h.sink.keys(); !slices.Equal(got, ids) {
		t.Fatalf("submitted %v, want each of %v once", got, ids)
	}
	if n := h.searchCount(t, idx, "pending"); n != len(ids) {
		t.Fatalf("a search sees %d pending, want %d: the claims were refreshed, the test shows nothing", n, len(ids))
	}

	manual.Advance(p.cfg.ClaimVisibility + time.Second)
	if n, err := p.PollOnce(ctx); err != nil || n != 0 {
		t.Fatalf("poll of the stale copies = %d, %v; want 0 won", n, err)
	}
	if got := h.sink.keys(); !slices.Equal(got, ids) {
		t.Errorf("after the stale copies were offered, submitted %v; want each of %v once", got, ids)
	}
	if s := statusOf(t, p, idx); s.Failing {
		t.Errorf("claims lost on their version marked the index failing: %+v", s)
	}
}

// An index that remembers more just-claimed documents than the bound is
// refreshed by the poller, so the must_not of its search stays small.
func TestCrowdedIndexIsRefreshed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idx := h.rawIndex(t, "crowded", false)
	ids := h.addDocs(t, idx, "c", 6, time.Now().Add(-time.Hour))
	h.disableRefresh(t, idx)

	p := h.poller(t, Config{IndexPattern: idx, BatchSize: 3})
	p.recent.max = 2
	ctx := context.Background()
	if n, err := p.PollOnce(ctx); err != nil || n != 3 {
		t.Fatalf("first poll = %d, %v; want 3 won", n, err)
	}
	if n, err := p.PollOnce(ctx); err != nil || n != 3 {
		t.Fatalf("second poll = %d, %v; want 3 won", n, err)
	}
	if got := h.sink.keys(); !slices.Equal(got, ids) {
		t.Errorf("submitted %v, want each of %v once", got, ids)
	}
	p.recent.mu.Lock()
	remembered := len(p.recent.ids[idx])
	p.recent.mu.Unlock()
	if remembered != 3 {
		t.Errorf("remembers %d just-claimed documents, want the second poll's 3 (the first's were refreshed)", remembered)
	}
}

// The running loop searches while the previous page is claimed: every
// document is still claimed and submitted exactly once, with claims not
// refreshed, and Stop waits for the claim in flight.
func TestOverlappingPollsSubmitEachDocumentOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	base := time.Now().Add(-time.Hour)
	var ids []string
	for _, name := range []string{"lapa", "lapb"} {
		idx := h.rawIndex(t, name, false)
		ids = append(ids, h.addDocs(t, idx, name, 15, base)...)
		h.disableRefresh(t, idx)
	}
	slices.Sort(ids)

	p := h.poller(t, Config{IndexPattern: h.prefix + "lap*" + contentindex.RawSuffix, BatchSize: 4, PollInterval: 20 * time.Millisecond})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(h.sink.keys()) < len(ids) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if p.inflight.documents() != 0 || p.inflight.done != nil {
		t.Error("Stop returned with a claim in flight")
	}
	if got := h.sink.keys(); !slices.Equal(got, ids) {
		t.Errorf("submitted %d documents %v, want each of the %d once", len(got), got, len(ids))
	}
}
