package breaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/testenv"
)

// newTestBreaker returns a breaker on a manual clock, and the state changes
// it reports.
func newTestBreaker(t *testing.T, cfg Config) (*Breaker, *clock.Manual, *[]string) {
	t.Helper()
	c := clock.NewManual(time.Unix(0, 0))
	var changes []string
	cfg.Now = c.Now
	cfg.OnChange = func(name string, from, to State, _ error) {
		changes = append(changes, name+":"+from.String()+">"+to.String())
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, c, &changes
}

// Closed until Threshold consecutive failures; open refuses until the
// cooldown, then lets one probe through (half-open); a failed probe opens
// it again with the cooldown doubled up to MaxCooldown; a success closes it.
// (Ported from the publisher's own breaker, which this package replaces.)
func TestTransitions(t *testing.T) {
	t.Parallel()
	b, clk, changes := newTestBreaker(t, Config{Name: "redis", Threshold: 2, Cooldown: time.Second, MaxCooldown: 3 * time.Second})
	down := errors.New("connection refused")

	b.Failure(down)
	if ok, _ := b.Allow(); !ok || b.State() != Closed {
		t.Fatalf("one failure under threshold 2 opened the breaker")
	}
	b.Failure(down)
	if ok, wait := b.Allow(); ok || wait != time.Second {
		t.Fatalf("open breaker allowed %v, wait %s", ok, wait)
	}
	clk.Advance(time.Second)
	if ok, _ := b.Allow(); !ok || b.State() != HalfOpen {
		t.Fatalf("after cooldown: state %s, want a half-open probe", b.State())
	}
	b.Failure(down) // failed probe: open again, cooldown doubled
	if ok, wait := b.Allow(); ok || wait != 2*time.Second {
		t.Fatalf("after failed probe: allowed %v, wait %s, want 2s", ok, wait)
	}
	clk.Advance(2 * time.Second)
	b.Allow()
	b.Failure(down) // cooldown capped at 3s
	if _, wait := b.Allow(); wait != 3*time.Second {
		t.Fatalf("cooldown %s, want the 3s cap", wait)
	}
	clk.Advance(3 * time.Second)
	b.Allow()
	b.Success()
	if ok, _ := b.Allow(); !ok || b.State() != Closed {
		t.Fatalf("probe success: state %s, want closed", b.State())
	}
	want := "[redis:closed>open redis:open>half_open redis:half_open>open redis:open>half_open redis:half_open>open redis:open>half_open redis:half_open>closed]"
	if got := fmt.Sprint(*changes); got != want {
		t.Errorf("transitions %s, want %s", got, want)
	}
}

// A half-open breaker lets exactly one probe through: every other caller
// is refused until the probe reports, so an outage that is not over meets
// one call, not a burst of every waiting worker. A probe that never reports
// frees its slot after the cooldown.
func TestHalfOpenAdmitsOneProbe(t *testing.T) {
	t.Parallel()
	b, clk, _ := newTestBreaker(t, Config{Name: "redis", Threshold: 1, Cooldown: time.Second, MaxCooldown: 4 * time.Second})
	down := errors.New("NOAUTH Authentication required")
	b.Failure(down)
	clk.Advance(time.Second)
	if ok, _ := b.Allow(); !ok || b.State() != HalfOpen {
		t.Fatalf("after cooldown: state %s, want the probe let through", b.State())
	}
	for i := range 3 {
		if ok, wait := b.Allow(); ok || wait != time.Second {
			t.Fatalf("caller %d while the probe is out: allowed %v, wait %s; want refused for the cooldown", i, ok, wait)
		}
	}
	clk.Advance(400 * time.Millisecond)
	if ok, wait := b.Allow(); ok || wait != 600*time.Millisecond {
		t.Fatalf("later caller while the probe is out: allowed %v, wait %s, want refused, 600ms left", ok, wait)
	}
	// The probe's caller gave up without reporting: after the cooldown the
	// next caller is the probe.
	clk.Advance(600 * time.Millisecond)
	if ok, _ := b.Allow(); !ok {
		t.Fatal("a lost probe held the half-open breaker past its cooldown")
	}
	if ok, _ := b.Allow(); ok {
		t.Fatal("a second caller went through beside the new probe")
	}
	b.Success()
	for i := range 3 {
		if ok, _ := b.Allow(); !ok {
			t.Fatalf("caller %d refused after the probe closed the breaker", i)
		}
	}
}

// A success resets the count of consecutive failures and the cooldown.
func TestSuccessResetsFailuresAndCooldown(t *testing.T) {
	t.Parallel()
	b, clk, _ := newTestBreaker(t, Config{Name: "postgres", Threshold: 3, Cooldown: time.Second, MaxCooldown: time.Minute})
	down := errors.New("down")
	b.Failure(down)
	b.Failure(down)
	b.Success()
	b.Failure(down)
	b.Failure(down)
	if b.State() != Closed {
		t.Fatalf("failures not consecutive, yet the breaker is %s", b.State())
	}
	b.Failure(down) // third in a row
	if b.State() != Open {
		t.Fatalf("state %s after three consecutive failures", b.State())
	}
	for range 3 { // three failed probes: 2s, 4s, 8s
		_, wait := b.Allow()
		clk.Advance(wait)
		b.Allow()
		b.Failure(down)
	}
	if _, wait := b.Allow(); wait != 8*time.Second {
		t.Fatalf("cooldown %s after three failed probes, want 8s", wait)
	}
	clk.Advance(8 * time.Second)
	b.Allow()
	b.Success()
	for range 3 {
		b.Failure(down)
	}
	if _, wait := b.Allow(); wait != time.Second {
		t.Errorf("cooldown after a success and a new outage: %s, want the initial 1s", wait)
	}
}

// A failure reported while already open (a call in flight when it opened)
// neither changes the state nor restarts the cooldown.
func TestFailureWhileOpenKeepsCooldown(t *testing.T) {
	t.Parallel()
	b, clk, changes := newTestBreaker(t, Config{Name: "redis", Threshold: 1, Cooldown: 4 * time.Second})
	b.Failure(errors.New("first"))
	clk.Advance(3 * time.Second)
	b.Failure(errors.New("late"))
	if ok, wait := b.Allow(); ok || wait != time.Second {
		t.Fatalf("allowed %v wait %s, want the original cooldown's last second", ok, wait)
	}
	if len(*changes) != 1 {
		t.Errorf("transitions %v, want one", *changes)
	}
}

// Defaults, validation, and a cap below the cooldown.
func TestNewDefaults(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Fatal("a breaker without a name was accepted")
	}
	b, err := New(Config{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if b.cfg.Threshold != ThresholdDefault || b.cfg.Cooldown != CooldownDefault || b.cfg.MaxCooldown != MaxCooldownDefault || b.Name() != "x" {
		t.Errorf("defaults %+v", b.cfg)
	}
	b = MustNew(Config{Name: "y", Cooldown: time.Minute, MaxCooldown: time.Second})
	if b.cfg.MaxCooldown != time.Minute {
		t.Errorf("MaxCooldown %s below Cooldown not raised to it", b.cfg.MaxCooldown)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustNew without a name did not panic")
		}
	}()
	MustNew(Config{})
}

// Probe does nothing while closed or cooling down, and otherwise records
// the ping's answer; Ready names the dependency while the breaker is not
// closed; LastCause is the error that opened it.
func TestProbeReadyAndLastCause(t *testing.T) {
	t.Parallel()
	b, clk, _ := newTestBreaker(t, Config{Name: "redis", Threshold: 1, Cooldown: time.Second})
	ctx := context.Background()
	var pings int
	fail := func(context.Context) error { pings++; return errors.New("NOAUTH Authentication required.") }
	ok := func(context.Context) error { pings++; return nil }

	if s := b.Probe(ctx, fail); s != Closed || pings != 0 {
		t.Fatalf("probe of a closed breaker: %s, %d pings", s, pings)
	}
	if err := b.Ready(ctx); err != nil || b.LastCause() != nil {
		t.Fatalf("closed breaker: ready %v, cause %v", err, b.LastCause())
	}
	cause := errors.New("connection refused")
	b.Failure(cause)
	if err := b.Ready(ctx); err == nil || err.Error() != "redis circuit breaker open" {
		t.Fatalf("ready of an open breaker: %v", err)
	}
	if !errors.Is(b.LastCause(), cause) {
		t.Fatalf("last cause %v", b.LastCause())
	}
	if s := b.Probe(ctx, ok); s != Open || pings != 0 {
		t.Fatalf("probe during the cooldown: %s, %d pings", s, pings)
	}
	clk.Advance(time.Second)
	if s := b.Probe(ctx, fail); s != Open || pings != 1 {
		t.Fatalf("failed probe: %s, %d pings", s, pings)
	}
	if !strings.HasPrefix(b.LastCause().Error(), "NOAUTH") {
		t.Errorf("last cause after the failed probe: %v", b.LastCause())
	}
	clk.Advance(2 * time.Second)
	if s := b.Probe(ctx, ok); s != Closed || pings != 2 || !b.Closed() {
		t.Fatalf("successful probe: %s, %d pings", s, pings)
	}
	if err := b.Ready(ctx); err != nil || b.LastCause() != nil {
		t.Errorf("after recovery: ready %v, cause %v", err, b.LastCause())
	}
	b.Failure(cause)
	clk.Advance(time.Second)
	b.Allow()
	if err := b.Ready(ctx); err == nil || err.Error() != "redis circuit breaker half_open" {
		t.Errorf("ready of a half-open breaker: %v", err)
	}
}

func TestAllClosed(t *testing.T) {
	t.Parallel()
	a, _, _ := newTestBreaker(t, Config{Name: "a", Threshold: 1})
	b, _, _ := newTestBreaker(t, Config{Name: "b", Threshold: 1})
	if ok, first := AllClosed(a, nil, b); !ok || first != nil {
		t.Fatalf("all closed: %v %v", ok, first)
	}
	b.Failure(errors.New("down"))
	if ok, first := AllClosed(a, b); ok || first != b {
		t.Fatalf("b open: %v %v", ok, first)
	}
}

// The monitor probes an open breaker once its cooldown has passed and
// closes it when the ping succeeds; a closed breaker is never pinged.
func TestMonitorProbesOpenBreakers(t *testing.T) {
	t.Parallel()
	// The real clock here: the monitor runs on real time.
	down := MustNew(Config{Name: "down", Threshold: 1, Cooldown: time.Millisecond, MaxCooldown: time.Millisecond})
	up := MustNew(Config{Name: "up", Threshold: 1})
	var healthy atomic.Bool
	var downPings, upPings atomic.Int64
	m := NewMonitor(time.Millisecond, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)),
		Guarded{Breaker: down, Ping: func(context.Context) error {
			downPings.Add(1)
			if healthy.Load() {
				return nil
			}
			return errors.New("still down")
		}},
		Guarded{Breaker: up, Ping: func(context.Context) error { upPings.Add(1); return nil }})
	down.Failure(errors.New("down"))
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Stop(context.Background()) }()
	testenv.WaitFor(t, 10*time.Second, time.Millisecond, "a failed probe", func() bool { return downPings.Load() >= 1 })
	if down.State() == Closed {
		t.Fatal("a failed probe closed the breaker")
	}
	healthy.Store(true)
	testenv.WaitFor(t, 10*time.Second, time.Millisecond, "the breaker to close", down.Closed)
	if err := m.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if upPings.Load() != 0 {
		t.Errorf("closed breaker pinged %d times", upPings.Load())
	}
}
