// Package breaker is the circuit breaker every service puts around each of
// its external dependencies (Elasticsearch, each Postgres database, Redis).
//
// A fault of a dependency is not the fault of the work that met it: while a
// breaker is open, the components that need the dependency stop taking work
// (the classifier's poller stops claiming, the dead-letter retry worker stops
// retrying, the publisher stops claiming outbox rows), so an outage spends no
// retry budget and turns no document into a dead letter. Work resumes on its
// own when a probe succeeds.
//
// States: closed (work normally); open after Threshold consecutive failures
// (nothing is attempted); half-open after the cooldown (one probe goes
// through: success closes the breaker, failure opens it again with the
// cooldown doubled up to MaxCooldown).
package breaker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/north-cloud/infrastructure/config"
)

// State is the state of a Breaker.
type State int

// Breaker states; the values are what the *_breaker_state gauges report.
const (
	Closed   State = 0
	HalfOpen State = 1
	Open     State = 2
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half_open"
	default:
		return "open"
	}
}

// Defaults of Config.
const (
	ThresholdDefault   = 3
	CooldownDefault    = time.Second
	MaxCooldownDefault = 30 * time.Second
)

// Config configures a Breaker.
type Config struct {
	// Name is the dependency the breaker guards ("elasticsearch",
	// "postgres", "outbox_postgres", "redis"). Required.
	Name string
	// Threshold is the number of consecutive failures that open the
	// breaker. Defaults to ThresholdDefault.
	Threshold int
	// Cooldown is the wait before the first probe of an open breaker; it
	// doubles after each failed probe. Defaults to CooldownDefault.
	Cooldown time.Duration
	// MaxCooldown caps the wait between probes. Defaults to MaxCooldownDefault.
	MaxCooldown time.Duration
	// OnChange, when set, is called on every transition, under the
	// breaker's lock: keep it short (log a line, record a gauge).
	OnChange func(name string, from, to State, cause error)
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Breaker is safe for concurrent use.
type Breaker struct {
	cfg Config

	mu        sync.Mutex
	state     State
	failures  int
	wait      time.Duration
	openedAt  time.Time
	lastCause error
	// probeAt is when the half-open breaker let its one probe through; zero
	// when no probe is out.
	probeAt time.Time
}

// New returns a closed breaker.
func New(cfg Config) (*Breaker, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("new breaker: Name is required")
	}
	cfg.Threshold = config.PositiveOr(cfg.Threshold, ThresholdDefault)
	cfg.Cooldown = config.PositiveOr(cfg.Cooldown, CooldownDefault)
	cfg.MaxCooldown = config.PositiveOr(cfg.MaxCooldown, MaxCooldownDefault)
	if cfg.MaxCooldown < cfg.Cooldown {
		cfg.MaxCooldown = cfg.Cooldown
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breaker{cfg: cfg, wait: cfg.Cooldown}, nil
}

// MustNew is New for configurations known to be valid (a literal name).
func MustNew(cfg Config) *Breaker {
	b, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

// Name returns the dependency's name.
func (b *Breaker) Name() string { return b.cfg.Name }

// State returns the current state.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// LastCause returns the failure that last opened the breaker (nil when
// closed).
func (b *Breaker) LastCause() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Closed {
		return nil
	}
	return b.lastCause
}

// Allow reports whether the caller may use the dependency now. When the
// breaker is open and its cooldown has passed it turns half-open and allows
// this one call as the probe; every other caller is refused until the probe
// reports (Success or Failure). A probe that never reports (its caller gave
// up) frees the slot after the current cooldown, so a lost probe cannot
// hold the breaker half-open for good. When it refuses, Allow returns how
// long until the next probe may go.
func (b *Breaker) Allow() (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	switch b.state {
	case Closed:
		return true, 0
	case HalfOpen:
		if left := b.probeAt.Add(b.wait).Sub(now); left > 0 {
			return false, left
		}
		b.probeAt = now // the probe was lost: let another one go
		return true, 0
	}
	if left := b.openedAt.Add(b.wait).Sub(now); left > 0 {
		return false, left
	}
	b.probeAt = now
	b.set(HalfOpen, nil)
	return true, 0
}

// Success records that the dependency answered.
func (b *Breaker) Success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures = 0
	b.wait = b.cfg.Cooldown
	b.probeAt = time.Time{}
	if b.state != Closed {
		b.set(Closed, nil)
	}
}

// Failure records that the dependency could not be used.
func (b *Breaker) Failure(cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	b.lastCause = cause
	b.probeAt = time.Time{}
	switch b.state {
	case HalfOpen:
		b.wait = min(2*b.wait, b.cfg.MaxCooldown)
		b.openedAt = b.cfg.Now()
		b.set(Open, cause)
	case Closed:
		if b.failures >= b.cfg.Threshold {
			b.openedAt = b.cfg.Now()
			b.set(Open, cause)
		}
	case Open:
		// A call that was already in flight when the breaker opened.
	}
}

func (b *Breaker) set(to State, cause error) {
	from := b.state
	b.state = to
	if b.cfg.OnChange != nil && from != to {
		b.cfg.OnChange(b.cfg.Name, from, to, cause)
	}
}

// Closed reports whether the breaker lets work through without reserve.
// Components that start new work (a poll, a retry) check it before taking
// work that needs the dependency; a half-open breaker still counts as not
// closed, so only the probe goes through.
func (b *Breaker) Closed() bool { return b.State() == Closed }

// Probe checks an open breaker's dependency when its cooldown has passed,
// with probe (a ping), and records the answer. It does nothing while the
// breaker is closed or its cooldown runs. It returns the state afterwards.
func (b *Breaker) Probe(ctx context.Context, probe func(context.Context) error) State {
	if b.State() == Closed {
		return Closed
	}
	if ok, _ := b.Allow(); !ok {
		return Open
	}
	if err := probe(ctx); err != nil {
		b.Failure(err)
	} else {
		b.Success()
	}
	return b.State()
}

// Ready is a readiness check for /ready: it fails while the breaker is not
// closed, naming the dependency (and not the raw cause, which the log has).
func (b *Breaker) Ready(context.Context) error {
	if s := b.State(); s != Closed {
		return fmt.Errorf("%s circuit breaker %s", b.cfg.Name, s)
	}
	return nil
}
