package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoopRunsUntilStopAndHonoursWaits(t *testing.T) {
	t.Parallel()
	var steps atomic.Int64
	l := &Loop{Name: "test loop", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Step: func(ctx context.Context) time.Duration {
			if steps.Add(1) < 5 {
				return 0 // run again at once
			}
			return time.Hour
		}}
	if err := l.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	l = &Loop{Name: l.Name, Logger: l.Logger, Step: l.Step}
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel() // Start's context ending must not stop the loop
	deadline := time.Now().Add(5 * time.Second)
	for steps.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d steps ran", steps.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// The loop now waits an hour; Stop must cut the wait short.
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer stopCancel()
	if err := l.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if n := steps.Load(); n != 5 {
		t.Errorf("steps = %d, want 5", n)
	}
	if err := l.Start(context.Background()); err == nil {
		t.Error("a stopped loop started again")
	}
}

func TestLoopStopIsBoundedByItsContext(t *testing.T) {
	t.Parallel()
	release, entered := make(chan struct{}), make(chan struct{})
	l := &Loop{Name: "stuck", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Step: func(context.Context) time.Duration { close(entered); <-release; return time.Hour }}
	_ = l.Start(context.Background())
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Stop(ctx); err == nil {
		t.Error("Stop returned nil while the step was stuck")
	}
	close(release)
}

func TestJitterStaysWithinAFifth(t *testing.T) {
	t.Parallel()
	for range 100 {
		if d := Jitter(time.Second); d > time.Second || d < 800*time.Millisecond {
			t.Fatalf("Jitter(1s) = %s", d)
		}
	}
}
