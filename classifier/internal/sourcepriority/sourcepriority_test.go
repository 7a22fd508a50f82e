package sourcepriority_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/sourcepriority"
	"github.com/north-cloud/infrastructure/testenv"
)

// The poller's view: List has every mark, a source never marked is absent
// (normal), the last Set wins, and an unknown priority is refused without
// touching the table.
func TestStore(t *testing.T) {
	t.Parallel()
	db, _ := dbtest.Migrated(t)
	s := sourcepriority.NewStore(db)
	ctx := context.Background()
	if marks, err := s.List(ctx); err != nil || len(marks) != 0 {
		t.Fatalf("List on an empty table = %v, %v", marks, err)
	}
	for _, p := range []sourcepriority.Priority{sourcepriority.Low, sourcepriority.Normal, sourcepriority.Low} {
		if _, err := s.Set(ctx, "backfill", p, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Set(ctx, "news", sourcepriority.Normal, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ctx, "news", "urgent", "ops"); err == nil {
		t.Fatal("Set accepted priority urgent")
	}
	marks, err := s.List(ctx)
	if err != nil || len(marks) != 2 || marks["backfill"] != sourcepriority.Low || marks["news"] != sourcepriority.Normal {
		t.Fatalf("List = %v, %v; want backfill low and news normal", marks, err)
	}
	if m, err := s.Get(ctx, "elsewhere"); err != nil || m.Priority != sourcepriority.Normal || m.UpdatedAt != nil {
		t.Fatalf("Get of an unmarked source = %+v, %v", m, err)
	}
	for in, ok := range map[string]bool{"low": true, "normal": true, "LOW": false, "": false, "high": false} {
		if _, err := sourcepriority.Parse(in); (err == nil) != ok {
			t.Errorf("Parse(%q) error = %v, want ok=%t", in, err, ok)
		}
	}
}

func TestCacheFollowsTheMarks(t *testing.T) {
	t.Parallel()
	db, _ := dbtest.Migrated(t)
	store := sourcepriority.NewStore(db)
	ctx := context.Background()
	if _, err := store.Set(ctx, "slow_feed", sourcepriority.Low, "op"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Set(ctx, "wire", sourcepriority.Normal, "op"); err != nil {
		t.Fatal(err)
	}
	c := sourcepriority.NewCache(store, 20*time.Millisecond, testenv.Logger(t))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(c.Low(), []string{"slow_feed"}) {
		if time.Now().After(deadline) {
			t.Fatalf("Low() = %v, want [slow_feed]", c.Low())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := store.Set(ctx, "slow_feed", sourcepriority.Normal, "op"); err != nil {
		t.Fatal(err)
	}
	for len(c.Low()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the mark was lifted Low() = %v", c.Low())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
