// Package lifecycletest checks the start/stop contract of a long-lived
// component under concurrency, for tests run with -race: every component
// of the services runs it in its package's tests.
package lifecycletest

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of Config.
const (
	RoundsDefault      = 10
	GoroutinesDefault  = 8
	StopTimeoutDefault = 30 * time.Second
)

// Config tunes Stress.
type Config struct {
	// Rounds is the number of components made and stressed, one after
	// another. Defaults to RoundsDefault.
	Rounds int
	// Goroutines is the number of goroutines calling Start and Stop at once
	// on each component. Defaults to GoroutinesDefault.
	Goroutines int
	// StopTimeout bounds each Stop: a Stop that does not return within it
	// fails the test. Defaults to StopTimeoutDefault.
	StopTimeout time.Duration
}

func (c *Config) setDefaults() {
	c.Rounds = config.PositiveOr(c.Rounds, RoundsDefault)
	c.Goroutines = config.PositiveOr(c.Goroutines, GoroutinesDefault)
	c.StopTimeout = config.PositiveOr(c.StopTimeout, StopTimeoutDefault)
}

// Stress is StressWith with the default Config.
func Stress(t testing.TB, newComponent func(t testing.TB) lifecycle.Component) {
	t.Helper()
	StressWith(t, Config{}, newComponent)
}

// StressWith checks the start/stop contract of the components newComponent
// makes. For each round it makes a component, stops one that was never
// started (which must succeed and leave it unstartable), then makes another
// and calls Start and Stop on it from many goroutines at once, in random
// order. It fails the test when a Stop returns an error or does not return
// within Config.StopTimeout, when a Start that begins after a Stop has
// returned succeeds (a stopped component started again), or when Start and
// Stop are not idempotent once the dust settles. Run it under -race to
// catch unsynchronized state.
func StressWith(t testing.TB, cfg Config, newComponent func(t testing.TB) lifecycle.Component) {
	t.Helper()
	cfg.setDefaults()
	for round := range cfg.Rounds {
		neverStarted := newComponent(t)
		stop(t, cfg, neverStarted, "Stop before Start")
		if err := neverStarted.Start(context.Background()); err == nil {
			t.Errorf("round %d: Start after Stop (never started) succeeded: a stopped component must not start", round)
			stop(t, cfg, neverStarted, "cleanup")
		}

		c := newComponent(t)
		var stopped atomic.Bool // some Stop has returned
		var wg sync.WaitGroup
		for g := range cfg.Goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for op := range 4 {
					if (g+op+round)%2 == 0 || rand.IntN(3) == 0 {
						after := stopped.Load()
						if err := c.Start(context.Background()); err == nil && after {
							t.Errorf("round %d: Start succeeded after a Stop had returned", round)
						}
						continue
					}
					if stop(t, cfg, c, "concurrent Stop") {
						stopped.Store(true)
					}
				}
			}()
		}
		wg.Wait()
		stop(t, cfg, c, "final Stop")
		stop(t, cfg, c, "second final Stop")
		if err := c.Start(context.Background()); err == nil {
			t.Errorf("round %d: Start after the final Stop succeeded", round)
		}
	}
}

// stop calls Stop with the configured bound and reports whether it
// returned nil.
func stop(t testing.TB, cfg Config, c lifecycle.Component, what string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StopTimeout)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	return true
}
