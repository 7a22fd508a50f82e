package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// periodic runs fn at start and then every interval (jittered) in a
// goroutine it owns, with the start/stop contract of every long-lived
// component: Start and Stop are idempotent and Stop is safe before Start.
type periodic struct {
	name     string
	interval time.Duration
	fn       func(ctx context.Context)
	logger   *slog.Logger

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func (p *periodic) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return fmt.Errorf("start %s: stopped", p.name)
	}
	if p.started {
		return nil
	}
	p.started = true
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel, p.done = cancel, make(chan struct{})
	go func() {
		defer close(p.done)
		for {
			p.fn(loopCtx)
			if !sleep(loopCtx, jitter(p.interval)) {
				return
			}
		}
	}()
	p.logger.InfoContext(ctx, p.name+" started", "interval", p.interval.String())
	return nil
}

func (p *periodic) Stop(ctx context.Context) error {
	p.mu.Lock()
	wasStarted := p.started && !p.stopped
	p.stopped = true
	p.mu.Unlock()
	if !wasStarted {
		return nil
	}
	p.cancel()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return errors.Join(fmt.Errorf("stop %s", p.name), ctx.Err())
	}
}
