package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Loop runs Step over and over in a goroutine it owns, waiting after each
// step for the duration the step returns (not at all when it returns zero
// or less), until Stop. It has the start/stop contract of every long-lived
// component: Start and Stop are idempotent, Stop is safe before Start, and a
// stopped Loop does not start again.
//
// Step runs on a context that Stop cancels and that is detached from
// Start's, so a shutdown signal reaches the loop through Stop only, after
// the components in front of it have stopped.
type Loop struct {
	// Name appears in logs and errors.
	Name string
	// Step does one round of work and returns the wait before the next.
	Step func(ctx context.Context) time.Duration
	// Logger records start. Required.
	Logger *slog.Logger

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start launches the loop; the first step runs at once.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return fmt.Errorf("start %s: already stopped", l.Name)
	}
	if l.started {
		return nil
	}
	if l.Step == nil || l.Logger == nil {
		return fmt.Errorf("start %s: Step and Logger are required", l.Name)
	}
	l.started = true
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		for loopCtx.Err() == nil {
			wait := l.Step(loopCtx)
			if wait <= 0 {
				continue
			}
			timer := time.NewTimer(wait)
			select {
			case <-loopCtx.Done():
				timer.Stop()
			case <-timer.C:
			}
		}
	}()
	l.Logger.InfoContext(ctx, l.Name+" started")
	return nil
}

// Stop cancels the loop's context and waits for the step in progress to
// return, bounded by ctx.
func (l *Loop) Stop(ctx context.Context) error {
	l.mu.Lock()
	running := l.started && !l.stopped
	l.stopped = true
	l.mu.Unlock()
	if !running {
		return nil
	}
	l.cancel()
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return errors.Join(fmt.Errorf("stop %s", l.Name), ctx.Err())
	}
}

// Every returns a Step that runs fn and then waits interval, less up to a
// fifth at random so that replicas started together drift apart.
func Every(interval time.Duration, fn func(ctx context.Context)) func(ctx context.Context) time.Duration {
	return func(ctx context.Context) time.Duration {
		fn(ctx)
		return Jitter(interval)
	}
}

// Jitter returns d less up to a fifth of it at random.
func Jitter(d time.Duration) time.Duration {
	if d < 5 {
		return d
	}
	return d - time.Duration(rand.Int64N(int64(d)/5))
}
