package api

import (
	"sync"
	"time"

	"github.com/north-cloud/infrastructure/clock"
)

// Login rate limiting defaults. Failed logins are counted per (user name,
// client address) and per client address, never per user name alone: an
// attacker's failures slow down the attacker's own address, and the
// operator's right password from another address still logs in. The first
// failures of a key are answered at once; each further one makes the key
// wait twice as long as the last (LoginFirstDelay, 2x, 4x, ... up to
// MaxDelay), and attempts during the wait get 429 with Retry-After without
// any password check (no bcrypt work). A key is forgotten Window after its
// last failure; a successful login forgets its (user name, address) key.
const (
	LoginFailuresPerUserDefault    = 5
	LoginFailuresPerAddressDefault = 20
	LoginWindowDefault             = 15 * time.Minute
	LoginMaxDelayDefault           = time.Minute
	// LoginFirstDelay is the wait after the first failure over the budget.
	LoginFirstDelay = time.Second
	// maxLimiterKeys bounds the memory of one limiter: beyond it expired
	// keys are dropped, then the key with the oldest last failure.
	maxLimiterKeys = 10000
)

// failureLimiter slows down the failed attempts of each key with growing
// delays. It is kept in memory: each replica counts on its own.
type failureLimiter struct {
	free     int
	maxDelay time.Duration
	window   time.Duration
	now      clock.Clock

	mu   sync.Mutex
	keys map[string]*failures
}

// failures is one key's record.
type failures struct {
	count int       // attempts counted as failures
	last  time.Time // the last of them
	until time.Time // no attempt before this
}

func newFailureLimiter(free int, maxDelay, window time.Duration, now clock.Clock) *failureLimiter {
	return &failureLimiter{free: free, maxDelay: maxDelay, window: window, now: now, keys: map[string]*failures{}}
}

// delay is the wait after count failures: none within the free budget,
// then LoginFirstDelay doubling up to maxDelay.
func (l *failureLimiter) delay(count int) time.Duration {
	over := count - l.free
	if over <= 0 {
		return 0
	}
	d := LoginFirstDelay
	for i := 1; i < over && d < l.maxDelay; i++ {
		d *= 2
	}
	return min(d, l.maxDelay)
}

// get returns key's record, dropping it when it expired; the caller holds
// mu.
func (l *failureLimiter) get(key string, now time.Time) *failures {
	f := l.keys[key]
	if f != nil && now.Sub(f.last) >= l.window {
		delete(l.keys, key)
		return nil
	}
	return f
}

// take counts an attempt of key as a failure, in the same step as it
// checks the delay, so concurrent attempts cannot all slip through. While
// key must wait it counts nothing and reports how long. A successful
// attempt is taken back with forgive or reset.
func (l *failureLimiter) take(key string) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now.Now()
	f := l.get(key, now)
	if f != nil && now.Before(f.until) {
		return f.until.Sub(now), false
	}
	if f == nil {
		if len(l.keys) >= maxLimiterKeys {
			l.evict(now)
		}
		f = &failures{}
		l.keys[key] = f
	}
	f.count++
	f.last = now
	f.until = now.Add(l.delay(f.count))
	return 0, true
}

// forgive takes back one attempt of key (it succeeded).
func (l *failureLimiter) forgive(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.keys[key]
	if f == nil {
		return
	}
	if f.count--; f.count <= 0 {
		delete(l.keys, key)
		return
	}
	f.until = f.last.Add(l.delay(f.count))
}

// reset forgets key.
func (l *failureLimiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}

// evict makes room for one key: expired keys go first, then the key whose
// last failure is oldest. The caller holds mu.
func (l *failureLimiter) evict(now time.Time) {
	var oldestKey string
	var oldest time.Time
	for k := range l.keys {
		f := l.get(k, now)
		if f == nil {
			continue
		}
		if oldestKey == "" || f.last.Before(oldest) {
			oldestKey, oldest = k, f.last
		}
	}
	if len(l.keys) >= maxLimiterKeys {
		delete(l.keys, oldestKey)
	}
}

// size is the number of keys tracked.
func (l *failureLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}
