package poller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
)

// order returns "index/id" of every submitted document in submission order.
func (s *collectSink) order() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.docs))
	for i, d := range s.docs {
		out[i] = d.Index + "/" + d.ID
	}
	return out
}

// addLeveled indexes n pending documents named prefix-NN that name level
// (none when empty), the first crawled at base and each next one a minute
// later.
func (h *harness) addLeveled(t *testing.T, index, prefix, level string, n int, base time.Time) []string {
	t.Helper()
	var body bytes.Buffer
	keys := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("%s-%02d", prefix, i)
		keys[i] = index + "/" + id
		meta, _ := json.Marshal(map[string]any{"index": map[string]any{"_index": index, "_id": id}})
		doc := map[string]any{
			"id": id, "url": "https://example.org/" + id, "source_name": strings.TrimSuffix(index, contentindex.RawSuffix),
			"title": "Title " + id, "raw_text": "some words about " + id, "word_count": 4,
			"crawled_at":            base.Add(time.Duration(i) * time.Minute).UTC().Format(time.RFC3339),
			"classification_status": contentindex.StatusPending,
		}
		if level != "" {
			doc["priority"] = level
		}
		b, _ := json.Marshal(doc)
		body.Write(meta)
		body.WriteByte('\n')
		body.Write(b)
		body.WriteByte('\n')
	}
	h.bulk(t, &body)
	return keys
}

// The five levels of the queue hygiene rules order the fresh lane and the
// batch: every critical document before every high one, and so on down to
// cleanup, whatever their age, while the backlog lane still takes the
// oldest. Before, a document was normal or low, and "critical" or "high"
// counted as normal.
func TestFiveLevelsOrderTheFreshLaneAndTheBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idx := h.rawIndex(t, "news", false)
	now := time.Now()
	// The lower the level, the fresher: recency alone would rank them the
	// other way round. Cleanup is the oldest, for the backlog lane.
	cleanup := h.addLeveled(t, idx, "e-cleanup", contentindex.PriorityCleanup, 3, now.Add(-5*time.Hour))
	critical := h.addLeveled(t, idx, "a-critical", contentindex.PriorityCritical, 3, now.Add(-4*time.Hour))
	high := h.addLeveled(t, idx, "b-high", contentindex.PriorityHigh, 3, now.Add(-3*time.Hour))
	normal := h.addLeveled(t, idx, "c-normal", "", 3, now.Add(-2*time.Hour))
	h.addLeveled(t, idx, "d-low", contentindex.PriorityLow, 3, now.Add(-1*time.Hour))

	// 10 of 15: a fresh lane of 8 and a backlog lane of 2.
	p := h.poller(t, Config{BatchSize: 10, PollInterval: time.Second, BacklogShare: 0.2})
	if _, err := p.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Fresh lane: the 3 critical, the 3 high, the 2 freshest normal; the
	// backlog lane: the 2 oldest (cleanup); submitted level by level.
	want := slices.Concat(critical, high, normal[1:], cleanup[:2])
	if got := h.sink.order(); !slices.Equal(sorted(got[:6]), sorted(want[:6])) || !slices.Equal(sorted(got), sorted(want)) {
		t.Fatalf("submitted %v,\\nwant (in level order) %v", got, want)
	}
	got := h.sink.order()
	for i := 1; i < len(got); i++ {
		if rank(got[i-1]) > rank(got[i]) {
			t.Errorf("submitted %s before %s: not in level order (%v)", got[i-1], got[i], got)
		}
	}
}

// A source's mark is the level of its documents that name none: the
// documents of a source marked high come before a normal source's fresher
// ones; a source marked critical goes to the urgent queue whatever the age
// of its documents; a document that names a level above its low source's
// still gets the fresh lane.
func TestSourceLevelIsTheLevelOfItsDocuments(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	news := h.rawIndex(t, "news", false)
	wire := h.rawIndex(t, "wire", false)
	alerts := h.rawIndex(t, "alerts", false)
	backfill := h.rawIndex(t, "backfill", false)
	now := time.Now()
	h.addLeveled(t, news, "n", "", 10, now.Add(-30*time.Minute))
	fromWire := h.addLeveled(t, wire, "w", "", 10, now.Add(-6*time.Hour)) // older, but high
	fromAlerts := h.addLeveled(t, alerts, "a", "", 2, now.Add(-48*time.Hour))
	h.addLeveled(t, backfill, "b", "", 5, now.Add(-72*time.Hour))
	bump := h.addLeveled(t, backfill, "bump", contentindex.PriorityHigh, 1, now.Add(-70*time.Hour))
	levels := map[string]string{
		h.prefix + "wire": contentindex.PriorityHigh, h.prefix + "alerts": contentindex.PriorityCritical,
		h.prefix + "backfill": contentindex.PriorityLow,
	}
	urgent := &collectSink{}
	p := h.poller(t, Config{BatchSize: 16, PollInterval: time.Second, BacklogShare: 0.2, Urgent: urgent, UrgentAge: 5 * time.Minute,
		SourcePriority: func(source string) string { return levels[source] }})
	if _, err := p.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := urgent.keys(); !slices.Equal(got, fromAlerts) {
		t.Errorf("urgent queue got %v, want the critical source's two-day-old documents %v", got, fromAlerts)
	}
	got := h.sink.order()
	if !slices.Contains(got, bump[0]) {
		t.Errorf("the low source's document marked high was not claimed: %v", got)
	}
	// Per index a share of 4: fresh 3, backlog 1. Wire's 4 come before
	// news's in the submission order although news is fresher.
	var firstNews, lastWire int = -1, -1
	for i, k := range got {
		switch {
		case strings.HasPrefix(k, news+"/") && firstNews < 0:
			firstNews = i
		case strings.HasPrefix(k, wire+"/"):
			lastWire = i
		}
	}
	if lastWire < 0 || firstNews < 0 || lastWire > firstNews {
		t.Errorf("the high source's documents were not submitted before the normal one's: %v (wire %v)", got, fromWire[:4])
	}
	for _, k := range got {
		if strings.HasPrefix(k, backfill+"/b-") && k != backfill+"/b-00" {
			t.Errorf("the low source got more than its backlog lane's oldest document: %s in %v", k, got)
		}
	}
}

// rank orders the test documents' keys by the level their id names.
func rank(key string) int {
	for i, l := range []string{"/a-", "/b-", "/c-", "/d-", "/e-"} {
		if strings.Contains(key, l) {
			return i
		}
	}
	return -1
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestLevelWeightsSeparateTheLevels(t *testing.T) {
	// A document scores between 0.001 and 1.2 (substantive) times its
	// level's weight; the best of a level must score below the worst of
	// the level above.
	levels := contentindex.Priorities()
	for i := 1; i < len(levels); i++ {
		above, below := levelWeight(levels[i-1])*0.001, levelWeight(levels[i])*1.001*substantiveWeight
		if below >= above {
			t.Errorf("%s's best score %g reaches %s's worst %g", levels[i], below, levels[i-1], above)
		}
	}
	p := &Poller{}
	if l := p.prio.level(&domain.RawContent{RawDocument: contentindex.RawDocument{Priority: "cleanup"}}); l != contentindex.PriorityCleanup {
		t.Errorf("level of a cleanup document = %q", l)
	}
}
