// Package lifecycle runs a service's long-lived components (HTTP server,
// pollers, workers) from main: it starts them in order, waits for the signal
// to stop, and stops them in reverse order within one shutdown deadline, so
// a service drains its work instead of dying mid-request.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Component is anything with a start/stop contract. Start must return once
// the component is running (background work belongs to goroutines the
// component owns); Stop must end that work, draining it as far as its ctx
// allows, and return.
type Component interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// NamedComponent pairs a Component with the name used in logs and errors.
type NamedComponent struct {
	Name      string
	Component Component
}

// Named is shorthand for NamedComponent{Name: name, Component: c}.
func Named(name string, c Component) NamedComponent {
	return NamedComponent{Name: name, Component: c}
}

// Run starts components in order, blocks until ctx is done (main passes
// signal.NotifyContext(ctx, SIGINT, SIGTERM)), then stops them in reverse
// order so that, for example, the HTTP server stops taking requests before
// the workers behind it drain. All stops share one deadline of
// shutdownTimeout, started when ctx ends; a component still stopping when it
// passes is abandoned, the ones after it are not stopped, and both are
// reported. If a component fails to start, the ones
// already started are stopped the same way and the start error is returned.
//
// ctx is passed to each Start and is cancelled at the shutdown signal, so a
// component must not tie in-flight work to it; Stop is what ends its work.
// Run returns nil after a clean shutdown, or the errors of every failed or
// abandoned step joined together.
func Run(ctx context.Context, logger *slog.Logger, shutdownTimeout time.Duration, components ...NamedComponent) error {
	if logger == nil {
		return errors.New("run: logger is required")
	}
	if shutdownTimeout <= 0 {
		return fmt.Errorf("run: shutdownTimeout must be positive (got %s)", shutdownTimeout)
	}
	for i, nc := range components {
		if nc.Name == "" || nc.Component == nil {
			return fmt.Errorf("run: component %d (%q) needs a name and a Component", i, nc.Name)
		}
	}

	for i, nc := range components {
		if err := ctx.Err(); err != nil {
			err = fmt.Errorf("start %s: aborted: %w", nc.Name, err)
			return errors.Join(err, stopAll(logger, shutdownTimeout, components[:i]))
		}
		start := time.Now()
		if err := nc.Component.Start(ctx); err != nil {
			logger.ErrorContext(ctx, "component failed to start", slog.String("component", nc.Name), slog.Any("error", err))
			err = fmt.Errorf("start %s: %w", nc.Name, err)
			return errors.Join(err, stopAll(logger, shutdownTimeout, components[:i]))
		}
		logger.InfoContext(ctx, "component started", slog.String("component", nc.Name), durationMS(start))
	}

	<-ctx.Done()
	logger.Info("shutting down", slog.Duration("timeout", shutdownTimeout), slog.Any("cause", context.Cause(ctx)))
	return stopAll(logger, shutdownTimeout, components)
}

// stopGrace is how long past the shutdown deadline Run still waits for a
// Stop, so a component that honours its ctx and returns right at the
// deadline is reported with its own error rather than as abandoned.
const stopGrace = 100 * time.Millisecond

type stopResult struct {
	name string
	err  error
	took time.Duration
}

// stopAll stops components in reverse order under one deadline. The stops
// run one after another in a goroutine of their own, so that a component
// ignoring its ctx cannot hold Run past the deadline: Run reports it (and
// the components after it, which were never stopped) and returns. That
// goroutine then ends when the hung Stop does, or with the process.
func stopAll(logger *slog.Logger, timeout time.Duration, components []NamedComponent) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	wait := time.NewTimer(timeout + stopGrace)
	defer wait.Stop()

	results := make(chan stopResult, len(components)) // never blocks the sender
	go func() {
		for _, nc := range slices.Backward(components) {
			start := time.Now()
			err := nc.Component.Stop(ctx)
			results <- stopResult{name: nc.Name, err: err, took: time.Since(start)}
		}
	}()

	var errs []error
	for i := range components {
		var r stopResult
		select {
		case r = <-results:
		case <-wait.C:
			// A Stop that returned by now is reported as it returned: when
			// its result and the timer are both ready, select may pick
			// either.
			returned := false
			select {
			case r = <-results:
				returned = true
				// Past the deadline, each later Stop (whose ctx is done) gets
				// the grace to return.
				wait.Reset(stopGrace)
			default:
			}
			if returned {
				break
			}
			hung := components[len(components)-1-i].Name
			errs = append(errs, fmt.Errorf("stop %s: abandoned, still stopping after %s: %w", hung, timeout, context.DeadlineExceeded))
			logger.Error("component did not stop before the shutdown deadline", slog.String("component", hung))
			for _, nc := range slices.Backward(components[:len(components)-1-i]) {
				errs = append(errs, fmt.Errorf("stop %s: not stopped, shutdown deadline passed while stopping %s", nc.Name, hung))
			}
			return errors.Join(errs...)
		}
		attrs := []any{slog.String("component", r.name), slog.Float64("duration_ms", float64(r.took.Microseconds())/1000)}
		if r.err != nil {
			logger.Error("component failed to stop", append(attrs, slog.Any("error", r.err))...)
			errs = append(errs, fmt.Errorf("stop %s: %w", r.name, r.err))
			continue
		}
		logger.Info("component stopped", attrs...)
	}
	return errors.Join(errs...)
}

func durationMS(start time.Time) slog.Attr {
	return slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)
}
