package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/index-manager/internal/rates"
	"github.com/north-cloud/infrastructure/testenv"
)

// TestRatesMove: after a sample, indexing documents and searching the
// index make both rates positive in the stats and the details.
func TestRatesMove(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_rates_raw_content"
	b.createIndex(name)
	sampler, err := rates.NewSampler(b.store, b.samples, rates.SamplerConfig{Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}

	stats := func() indices.Stats {
		t.Helper()
		r := b.do(request{Method: "GET", Path: "/api/v1/indices/" + name + "/stats"})
		if r.Status != http.StatusOK {
			t.Fatalf("stats: %d %s", r.Status, r.Body)
		}
		var s indices.Stats
		r.decode(t, &s)
		return s
	}
	if s := stats(); s.IndexingRate != 0 || s.SearchRate != 0 {
		t.Fatalf("rates before any sample: %+v", s)
	}
	if err := sampler.SampleOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := stats(); s.IndexingRate != 0 || s.SearchRate != 0 {
		t.Fatalf("rates of an idle index: %+v", s)
	}

	b.indexDocs(name, 50)
	for range 3 {
		if r := b.do(request{Method: "POST", Path: "/api/v1/indices/" + name + "/_query", Body: `{"query":{"match":{"title":"crime"}}}`}); r.Status != http.StatusOK {
			t.Fatalf("query: %d %s", r.Status, r.Body)
		}
	}
	s := stats()
	if s.IndexingRate <= 0 || s.SearchRate <= 0 {
		t.Fatalf("rates did not move: %+v", s)
	}
	r := b.do(request{Method: "GET", Path: "/api/v1/indices/" + name})
	var d indices.Detail
	r.decode(t, &d)
	if d.Stats.IndexingRate <= 0 || d.Stats.SearchRate <= 0 || d.Stats.DocCount != 50 {
		t.Fatalf("detail rates did not move: %+v", d.Stats)
	}
}

// TestSamplerRunsAndPrunes runs the sampler as a component: it stores a
// sample of the test's index, prunes samples older than its retention, and
// stops cleanly (Stop is idempotent, Start after Stop fails).
func TestSamplerRunsAndPrunes(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "_s_classified_content"
	b.createIndex(name)
	old := time.Now().Add(-2 * time.Hour)
	if err := b.samples.Insert(context.Background(), old, []indices.Counters{{Index: name, UUID: "gone", IndexTotal: 1}}); err != nil {
		t.Fatal(err)
	}
	sampler, err := rates.NewSampler(b.store, b.samples, rates.SamplerConfig{
		Interval: 20 * time.Millisecond, Retention: time.Hour, Logger: testenv.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sampler.Stop(context.Background()); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	sampler, _ = rates.NewSampler(b.store, b.samples, rates.SamplerConfig{Interval: 20 * time.Millisecond, Retention: time.Hour, Logger: testenv.Logger(t)})
	if err := sampler.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sampler.Start(context.Background()); err != nil {
		t.Fatalf("second start: %v", err)
	}
	// Wait (bounded) for at least two rounds of this index.
	deadline := time.Now().Add(30 * time.Second)
	var n, stale int
	for time.Now().Before(deadline) {
		if err := b.db.QueryRow(`SELECT count(*) FILTER (WHERE index_uuid <> 'gone'), count(*) FILTER (WHERE index_uuid = 'gone')
			FROM index_stats_samples WHERE index_name = $1`, name).Scan(&n, &stale); err != nil {
			t.Fatal(err)
		}
		if n >= 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sampler.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := sampler.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if n < 2 || stale != 0 {
		t.Fatalf("samples of %s: %d, stale kept: %d", name, n, stale)
	}
	if err := sampler.Start(context.Background()); err == nil {
		t.Fatal("start after stop succeeded")
	}
}

func TestComputeIgnoresCounterResets(t *testing.T) {
	t.Parallel()
	at := time.Now()
	older := rates.Sample{Counters: indices.Counters{IndexTotal: 100, QueryTotal: 10}, At: at}
	newer := rates.Sample{Counters: indices.Counters{IndexTotal: 400, QueryTotal: 5}, At: at.Add(10 * time.Second)}
	idx, srch := rates.Compute(older, newer)
	if idx != 30 || srch != 0 {
		t.Fatalf("rates %v %v, want 30 and 0", idx, srch)
	}
	if idx, srch := rates.Compute(newer, older); idx != 0 || srch != 0 {
		t.Fatalf("rates of readings out of order: %v %v", idx, srch)
	}
}
