package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/north-cloud/infrastructure/backoff"
)

// Loop runs Step over and over in a goroutine it owns, waiting after each
// step for the duration the step returns (not at all when it returns zero
// or less), until Stop. It has the start/stop contract of Base: Start and
// Stop are idempotent, Stop is safe before Start, and a stopped Loop does
// not start again.
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

	base Base
}

// Start launches the loop; the first step runs at once.
func (l *Loop) Start(ctx context.Context) error {
	if l.Step == nil || l.Logger == nil {
		return fmt.Errorf("start %s: Step and Logger are required", l.Name)
	}
	err := l.base.StartFunc(ctx, func(run context.Context) error {
		l.base.Go(func() { l.run(run) })
		l.Logger.InfoContext(ctx, l.Name+" started")
		return nil
	})
	if err != nil {
		return fmt.Errorf("start %s: %w", l.Name, err)
	}
	return nil
}

func (l *Loop) run(ctx context.Context) {
	for ctx.Err() == nil {
		wait := l.Step(ctx)
		if wait <= 0 {
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Stop cancels the loop's context and waits for the step in progress to
// return, bounded by ctx.
func (l *Loop) Stop(ctx context.Context) error {
	if err := l.base.Stop(ctx); err != nil {
		return fmt.Errorf("stop %s: %w", l.Name, err)
	}
	return nil
}

// Every returns a Step that runs fn and then waits interval, less up to a
// fifth at random so that replicas started together drift apart.
func Every(interval time.Duration, fn func(ctx context.Context)) func(ctx context.Context) time.Duration {
	return func(ctx context.Context) time.Duration {
		fn(ctx)
		return Jitter(interval)
	}
}

// Jitter returns d less up to a fifth of it at random (backoff.Jitter), the
// spread of every periodic loop.
func Jitter(d time.Duration) time.Duration {
	return backoff.Jitter(d, 0.2)
}
