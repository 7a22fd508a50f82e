// Package clock is the one clock components read the time from, so that a
// test can set the time instead of sleeping through it.
package clock

import (
	"sync"
	"time"
)

// Clock returns the current time. The zero Clock (nil) is the system clock,
// so a config struct's Clock field needs no default: call Now on it.
type Clock func() time.Time

// Now returns the time of c, or time.Now when c is nil.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// Since returns the time elapsed since t on c.
func (c Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Manual is a clock for tests that moves only when told to. It is safe for
// concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a Manual clock showing t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Clock returns the Clock that reads m.
func (m *Manual) Clock() Clock { return m.Now }

// Now returns m's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves m forward by d.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

// Set moves m to t.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = t
}
