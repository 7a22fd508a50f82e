package api

import (
	"sync"
	"time"
)

// Login rate limiting defaults: failed logins counted per user name and
// per client address over a sliding window. When either count reaches its
// limit, further attempts from that name or address are refused with 429
// and Retry-After, without checking the password (no bcrypt work), until
// the oldest failure leaves the window. A successful login clears the
// user name's count.
const (
	LoginFailuresPerUserDefault    = 5
	LoginFailuresPerAddressDefault = 20
	LoginWindowDefault             = time.Minute
	// maxLimiterKeys bounds the memory of one limiter: beyond it the key
	// with the oldest last failure is forgotten.
	maxLimiterKeys = 10000
)

// failureLimiter counts failures per key in a sliding window. It is kept in
// memory: each replica counts on its own.
type failureLimiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu       sync.Mutex
	failures map[string][]time.Time // oldest first, at most limit entries
}

func newFailureLimiter(limit int, window time.Duration) *failureLimiter {
	return &failureLimiter{limit: limit, window: window, now: time.Now, failures: map[string][]time.Time{}}
}

// prune drops the failures of key that left the window; the caller holds
// mu.
func (l *failureLimiter) prune(key string, now time.Time) []time.Time {
	ts := l.failures[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= l.window {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.failures, key)
		return nil
	}
	l.failures[key] = ts
	return ts
}

// take records an attempt of key as a failure, in the same step as it
// checks the limit, so concurrent attempts cannot all slip under it. At
// the limit it records nothing and reports how long until an attempt is
// allowed again. A successful attempt is taken back with forgive.
func (l *failureLimiter) take(key string) (at time.Time, wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	ts := l.prune(key, now)
	if len(ts) >= l.limit {
		return time.Time{}, ts[len(ts)-l.limit].Add(l.window).Sub(now), false
	}
	if ts == nil && len(l.failures) >= maxLimiterKeys {
		l.evict(now)
	}
	l.failures[key] = append(ts, now)
	return now, 0, true
}

// forgive takes back the attempt of key recorded at at.
func (l *failureLimiter) forgive(key string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := l.failures[key]
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Equal(at) {
			ts = append(ts[:i:i], ts[i+1:]...)
			break
		}
	}
	if len(ts) == 0 {
		delete(l.failures, key)
		return
	}
	l.failures[key] = ts
}

// evict makes room for one key: expired keys go first, then the key whose
// last failure is oldest. The caller holds mu.
func (l *failureLimiter) evict(now time.Time) {
	var oldestKey string
	var oldest time.Time
	for k := range l.failures {
		ts := l.prune(k, now)
		if ts == nil {
			continue
		}
		if last := ts[len(ts)-1]; oldestKey == "" || last.Before(oldest) {
			oldestKey, oldest = k, last
		}
	}
	if len(l.failures) >= maxLimiterKeys {
		delete(l.failures, oldestKey)
	}
}

// reset forgets the failures of key.
func (l *failureLimiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, key)
}
