package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelayGrowsAndCaps(t *testing.T) {
	t.Parallel()
	p := Policy{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}
	tests := []struct {
		attempt int
		want    time.Duration
	}{
		{0, 100 * time.Millisecond},
		{1, 200 * time.Millisecond},
		{3, 800 * time.Millisecond},
		{4, time.Second},
		{500, time.Second},
		{-1, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := p.Delay(tt.attempt); got != tt.want {
			t.Errorf("Delay(%d) = %s, want %s", tt.attempt, got, tt.want)
		}
	}
}

func TestDelayJitterStaysInRange(t *testing.T) {
	t.Parallel()
	p := Policy{Initial: time.Second, Max: time.Minute, Jitter: 0.5}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := p.Delay(2) // 4s before jitter
		if d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("Delay(2) = %s, want within [2s, 4s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("jitter produced only %d distinct delays in 200 draws", len(seen))
	}
}

func TestRetrySucceedsAfterFailures(t *testing.T) {
	t.Parallel()
	calls := 0
	var notified []int
	err := Retry(context.Background(), Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond}, time.Second,
		func(context.Context) error {
			calls++
			if calls < 3 {
				return errors.New("not yet")
			}
			return nil
		},
		func(attempt int, _ error, _ time.Duration) { notified = append(notified, attempt) })
	if err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if calls != 3 || len(notified) != 2 || notified[1] != 2 {
		t.Fatalf("calls=%d notified=%v, want 3 calls and notifications [1 2]", calls, notified)
	}
}

func TestRetryStopsOnBudgetAndPermanent(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection refused")
	err := Retry(context.Background(), Policy{Initial: 20 * time.Millisecond}, 50*time.Millisecond,
		func(context.Context) error { return boom }, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("budget exhausted: err = %v, want wrapping %v", err, boom)
	}

	calls := 0
	err = Retry(context.Background(), Policy{}, time.Minute, func(context.Context) error {
		calls++
		return Permanent(boom)
	}, nil)
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("permanent: err=%v calls=%d, want %v after 1 call", err, calls, boom)
	}
}

func TestRetryHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	// A Retry that ignored ctx would wait an hour: returning within a minute
	// (room for a loaded machine) proves the 30ms deadline ended it.
	done := make(chan error, 1)
	go func() {
		done <- Retry(ctx, Policy{Initial: time.Hour, Max: time.Hour}, 0,
			func(context.Context) error { return errors.New("down") }, nil)
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Retry ignored the context: still waiting after a minute")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestJitterRange(t *testing.T) {
	t.Parallel()
	seenBelow := false
	for range 200 {
		d := Jitter(time.Second, 0.2)
		if d > time.Second || d < 800*time.Millisecond {
			t.Fatalf("Jitter(1s, 0.2) = %s, want within [800ms, 1s]", d)
		}
		seenBelow = seenBelow || d < time.Second
	}
	if !seenBelow {
		t.Error("Jitter never took anything off in 200 draws")
	}
	for _, tc := range []struct {
		d        time.Duration
		fraction float64
	}{{time.Second, 0}, {time.Second, -1}, {0, 0.5}, {-time.Second, 0.5}} {
		if got := Jitter(tc.d, tc.fraction); got != tc.d {
			t.Errorf("Jitter(%s, %v) = %s, want it unchanged", tc.d, tc.fraction, got)
		}
	}
	if d := Jitter(time.Second, 5); d < 0 || d > time.Second {
		t.Errorf("Jitter(1s, 5) = %s: the fraction is clamped to 1", d)
	}
}
