package worker

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestCircuitBreakerTransitions(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	var changes []string
	b := NewCircuitBreaker(2, time.Second, 3*time.Second, func(from, to BreakerState, _ error) {
		changes = append(changes, from.String()+">"+to.String())
	})
	b.now = func() time.Time { return now }
	down := errors.New("connection refused")

	b.Failure(down)
	if ok, _ := b.Allow(); !ok || b.State() != BreakerClosed {
		t.Fatalf("one failure under threshold 2 opened the breaker")
	}
	b.Failure(down)
	if ok, wait := b.Allow(); ok || wait != time.Second {
		t.Fatalf("open breaker allowed %v, wait %s", ok, wait)
	}
	now = now.Add(time.Second)
	if ok, _ := b.Allow(); !ok || b.State() != BreakerHalfOpen {
		t.Fatalf("after cooldown: state %s, want a half-open probe", b.State())
	}
	b.Failure(down) // failed probe: open again, cooldown doubled
	if ok, wait := b.Allow(); ok || wait != 2*time.Second {
		t.Fatalf("after failed probe: allowed %v, wait %s, want 2s", ok, wait)
	}
	now = now.Add(2 * time.Second)
	b.Allow()
	b.Failure(down) // cooldown capped at 3s
	if _, wait := b.Allow(); wait != 3*time.Second {
		t.Fatalf("cooldown %s, want the 3s cap", wait)
	}
	now = now.Add(3 * time.Second)
	b.Allow()
	b.Success()
	if ok, _ := b.Allow(); !ok || b.State() != BreakerClosed {
		t.Fatalf("probe success: state %s, want closed", b.State())
	}
	want := "[closed>open open>half_open half_open>open open>half_open half_open>open open>half_open half_open>closed]"
	if got := fmt.Sprint(changes); got != want {
		t.Errorf("transitions %s, want %s", got, want)
	}
}
