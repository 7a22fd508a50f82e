package sourcepriority_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/sourcepriority"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
)

// setup returns a store over a migrated database and the test's
// Elasticsearch, with raw indices for the given sources (under the test's
// prefix, which it returns).
func setup(t *testing.T, maxLow int, sources ...string) (*sourcepriority.Store, string) {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	es, prefix := testenv.Elasticsearch(t)
	for _, s := range sources {
		if err := contentindex.CreateIndex(context.Background(), es, contentindex.RawIndex(prefix+s)); err != nil {
			t.Fatal(err)
		}
	}
	store, err := sourcepriority.New(sourcepriority.Config{DB: db, Raw: rawtest.Store(t, es), MaxLowMarks: maxLow})
	if err != nil {
		t.Fatal(err)
	}
	return store, prefix
}

// The poller's view: List has every mark, a source never marked is absent
// (normal), the last Set wins, and an unknown priority is refused without
// touching the table.
func TestStore(t *testing.T) {
	t.Parallel()
	s, prefix := setup(t, 0, "backfill", "news")
	backfill, news := prefix+"backfill", prefix+"news"
	ctx := context.Background()
	if marks, err := s.List(ctx); err != nil || len(marks) != 0 {
		t.Fatalf("List on an empty table = %v, %v", marks, err)
	}
	for _, p := range []sourcepriority.Priority{sourcepriority.Low, sourcepriority.Normal, sourcepriority.Low} {
		if _, err := s.Set(ctx, backfill, p, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Set(ctx, news, sourcepriority.Normal, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ctx, news, "urgent", "ops"); err == nil {
		t.Fatal("Set accepted priority urgent")
	}
	marks, err := s.List(ctx)
	if err != nil || len(marks) != 2 || marks[backfill] != sourcepriority.Low || marks[news] != sourcepriority.Normal {
		t.Fatalf("List = %v, %v; want backfill low and news normal", marks, err)
	}
	if m, err := s.Get(ctx, "elsewhere"); err != nil || m.Priority != sourcepriority.Normal || m.UpdatedAt != nil {
		t.Fatalf("Get of an unmarked source = %+v, %v", m, err)
	}
	for in, ok := range map[string]bool{"low": true, "normal": true, "critical": true, "high": true, "cleanup": true,
		"LOW": false, "": false, "urgent": false} {
		if _, err := sourcepriority.Parse(in); (err == nil) != ok {
			t.Errorf("Parse(%q) error = %v, want ok=%t", in, err, ok)
		}
	}
}

// Marks only for sources that exist, and a bounded number of them: a
// source with neither a raw index nor classified documents is refused
// (before, any name was stored, and every low one grew every poll's
// search); a mark outlives its index so it can be lifted; past MaxLowMarks a new low
// mark is refused while changing an existing mark still works.
func TestStoreMarksOnlyExistingSourcesBoundedInNumber(t *testing.T) {
	t.Parallel()
	s, prefix := setup(t, 2, "a", "b", "c")
	ctx := context.Background()
	if _, err := s.Set(ctx, prefix+"zz-no-such-source", sourcepriority.Low, "ops"); !errors.Is(err, sourcepriority.ErrUnknownSource) {
		t.Fatalf("Set on a source that does not exist = %v, want ErrUnknownSource", err)
	}
	if _, err := s.Set(ctx, prefix+"zz-no-such-source", sourcepriority.Normal, "ops"); !errors.Is(err, sourcepriority.ErrUnknownSource) {
		t.Fatalf("Set normal on a source that does not exist = %v, want ErrUnknownSource", err)
	}
	if marks, err := s.List(ctx); err != nil || len(marks) != 0 {
		t.Fatalf("refused marks were stored: %v, %v", marks, err)
	}
	for _, src := range []string{"a", "b"} {
		if _, err := s.Set(ctx, prefix+src, sourcepriority.Low, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Set(ctx, prefix+"c", sourcepriority.Low, "ops"); !errors.Is(err, sourcepriority.ErrTooManyMarks) {
		t.Fatalf("a third low mark with MaxLowMarks 2 = %v, want ErrTooManyMarks", err)
	}
	if _, err := s.Set(ctx, prefix+"a", sourcepriority.Low, "ops2"); err != nil {
		t.Fatalf("marking a low source low again at the bound = %v", err)
	}
	if _, err := s.Set(ctx, prefix+"c", sourcepriority.Normal, "ops"); err != nil {
		t.Fatalf("a normal mark at the bound = %v", err)
	}
	if _, err := s.Set(ctx, prefix+"b", sourcepriority.Normal, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ctx, prefix+"c", sourcepriority.Low, "ops"); err != nil {
		t.Fatalf("a low mark once another was lifted = %v", err)
	}
	// Concurrent new marks cannot pass the bound together.
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := s.Set(ctx, prefix+[]string{"a", "b", "c", "b"}[i], sourcepriority.Low, fmt.Sprint("op", i))
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil && !errors.Is(err, sourcepriority.ErrTooManyMarks) {
			t.Fatal(err)
		}
	}
	marks, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	low := 0
	for _, p := range marks {
		if p == sourcepriority.Low {
			low++
		}
	}
	if low > 2 {
		t.Fatalf("%d sources marked low with MaxLowMarks 2: %v", low, marks)
	}
}

func TestCacheFollowsTheMarks(t *testing.T) {
	t.Parallel()
	store, prefix := setup(t, 0, "slow_feed", "wire")
	slow, wire := prefix+"slow_feed", prefix+"wire"
	ctx := context.Background()
	if _, err := store.Set(ctx, slow, sourcepriority.Low, "op"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Set(ctx, wire, sourcepriority.Normal, "op"); err != nil {
		t.Fatal(err)
	}
	c := sourcepriority.NewCache(store, 20*time.Millisecond, testenv.Logger(t))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop(ctx) }()
	testenv.WaitFor(t, 10*time.Second, 10*time.Millisecond, "IsLow(slow_feed)", func() bool { return c.IsLow(slow) })
	if c.IsLow(wire) || c.IsLow("elsewhere") {
		t.Error("a normal or unmarked source is low")
	}
	if _, err := store.Set(ctx, slow, sourcepriority.Normal, "op"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, 10*time.Millisecond, "IsLow(slow_feed) to be false after the mark was lifted", func() bool { return !c.IsLow(slow) })
}

// The cache keeps the start/stop contract while it refreshes (run with
// -race).
func TestCacheStartStopStress(t *testing.T) {
	t.Parallel()
	store, _ := setup(t, 1)
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		return sourcepriority.NewCache(store, time.Millisecond, testenv.Logger(t))
	})
}
