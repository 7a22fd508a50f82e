package breaker

import (
	"context"
	"log/slog"
	"time"

	"github.com/north-cloud/infrastructure/lifecycle"
)

// MonitorIntervalDefault is how often a Monitor looks at its breakers.
const MonitorIntervalDefault = 250 * time.Millisecond

// Guarded is one breaker with the ping that probes its dependency.
type Guarded struct {
	Breaker *Breaker
	Ping    func(context.Context) error
}

// Monitor probes open breakers, so that work paused by an outage resumes
// on its own even when nothing else would touch the dependency (the poller
// does not claim while the outbox database is down, so no commit would ever
// probe it). It is a lifecycle component.
type Monitor struct {
	guarded []Guarded
	loop    lifecycle.Loop
}

// NewMonitor returns a monitor over guarded, probing every interval
// (MonitorIntervalDefault when zero); each probe is bounded by timeout.
func NewMonitor(interval, timeout time.Duration, logger *slog.Logger, guarded ...Guarded) *Monitor {
	if interval <= 0 {
		interval = MonitorIntervalDefault
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	m := &Monitor{guarded: guarded}
	m.loop = lifecycle.Loop{Name: "breaker monitor", Logger: logger, Step: lifecycle.Every(interval, func(ctx context.Context) {
		for _, g := range m.guarded {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			g.Breaker.Probe(pctx, g.Ping)
			cancel()
		}
	})}
	return m
}

// Start launches the probe loop.
func (m *Monitor) Start(ctx context.Context) error { return m.loop.Start(ctx) }

// Stop ends it, bounded by ctx.
func (m *Monitor) Stop(ctx context.Context) error { return m.loop.Stop(ctx) }

// AllClosed reports whether every breaker of bs is closed, and otherwise
// the first that is not.
func AllClosed(bs ...*Breaker) (bool, *Breaker) {
	for _, b := range bs {
		if b != nil && !b.Closed() {
			return false, b
		}
	}
	return true, nil
}
