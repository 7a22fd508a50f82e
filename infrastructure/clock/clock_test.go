package clock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/clock"
)

func TestZeroClockIsTheSystemClock(t *testing.T) {
	t.Parallel()
	var c clock.Clock
	before := time.Now()
	got := c.Now()
	if got.Before(before) || got.After(time.Now()) {
		t.Errorf("nil Clock returned %s, not the system time", got)
	}
}

func TestManual(t *testing.T) {
	t.Parallel()
	start := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	m := clock.NewManual(start)
	c := m.Clock()
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %s, want %s", c.Now(), start)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); m.Advance(time.Second); _ = c.Now() }()
	}
	wg.Wait()
	if got := c.Since(start); got != 10*time.Second {
		t.Errorf("Since(start) = %s after ten 1s advances, want 10s", got)
	}
	m.Set(start)
	if !c.Now().Equal(start) {
		t.Errorf("after Set, Now = %s", c.Now())
	}
}
