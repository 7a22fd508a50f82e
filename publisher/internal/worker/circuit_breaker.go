package worker

import (
	"sync"
	"time"
)

// BreakerState is the state of a CircuitBreaker.
type BreakerState int

// Breaker states; the values are what publisher_redis_breaker_state reports.
const (
	BreakerClosed   BreakerState = 0
	BreakerHalfOpen BreakerState = 1
	BreakerOpen     BreakerState = 2
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerHalfOpen:
		return "half_open"
	default:
		return "open"
	}
}

// CircuitBreaker stops the worker from claiming rows while Redis is down.
// Closed: work normally. After Threshold consecutive failures of Redis
// itself (not of one message) it opens: nothing is claimed, so rows stay
// pending and no retries are burned. After Cooldown it lets one probe
// through (half-open): success closes it, failure opens it again with the
// cooldown doubled up to MaxCooldown.
type CircuitBreaker struct {
	threshold   int
	cooldown    time.Duration
	maxCooldown time.Duration
	onChange    func(from, to BreakerState, cause error)
	now         func() time.Time

	mu       sync.Mutex
	state    BreakerState
	failures int
	wait     time.Duration
	openedAt time.Time
}

// NewCircuitBreaker returns a closed breaker. onChange, when not nil, is
// called (under the breaker's lock, so keep it short) on every transition.
func NewCircuitBreaker(threshold int, cooldown, maxCooldown time.Duration, onChange func(from, to BreakerState, cause error)) *CircuitBreaker {
	if threshold <= 0 {
		threshold = 1
	}
	if maxCooldown < cooldown {
		maxCooldown = cooldown
	}
	return &CircuitBreaker{threshold: threshold, cooldown: cooldown, maxCooldown: maxCooldown, wait: cooldown, onChange: onChange, now: time.Now}
}

// State returns the current state.
func (b *CircuitBreaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Allow reports whether the caller may use Redis now. When the breaker is
// open and its cooldown has passed it turns half-open and allows one probe;
// otherwise it returns how long until the next probe.
func (b *CircuitBreaker) Allow() (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != BreakerOpen {
		return true, 0
	}
	if left := b.openedAt.Add(b.wait).Sub(b.now()); left > 0 {
		return false, left
	}
	b.set(BreakerHalfOpen, nil)
	return true, 0
}

// Success records that Redis answered.
func (b *CircuitBreaker) Success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures = 0
	b.wait = b.cooldown
	if b.state != BreakerClosed {
		b.set(BreakerClosed, nil)
	}
}

// Failure records that Redis could not be reached.
func (b *CircuitBreaker) Failure(cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	switch b.state {
	case BreakerHalfOpen:
		b.wait = min(2*b.wait, b.maxCooldown)
		b.openedAt = b.now()
		b.set(BreakerOpen, cause)
	case BreakerClosed:
		if b.failures >= b.threshold {
			b.openedAt = b.now()
			b.set(BreakerOpen, cause)
		}
	}
}

func (b *CircuitBreaker) set(to BreakerState, cause error) {
	from := b.state
	b.state = to
	if b.onChange != nil && from != to {
		b.onChange(from, to, cause)
	}
}
