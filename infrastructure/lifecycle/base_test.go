package lifecycle_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
)

// ticker is a component built on Base: one goroutine that runs until Stop.
type ticker struct {
	base   lifecycle.Base
	starts atomic.Int64
	ticks  atomic.Int64
}

func (c *ticker) Start(ctx context.Context) error {
	return c.base.StartFunc(ctx, func(run context.Context) error {
		c.starts.Add(1)
		c.base.Go(func() {
			for run.Err() == nil {
				c.ticks.Add(1)
				select {
				case <-run.Done():
				case <-time.After(time.Millisecond):
				}
			}
		})
		return nil
	})
}

func (c *ticker) Stop(ctx context.Context) error { return c.base.Stop(ctx) }

func TestBaseStopBeforeStart(t *testing.T) {
	t.Parallel()
	c := &ticker{}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	if err := c.Start(context.Background()); !errors.Is(err, lifecycle.ErrStopped) {
		t.Fatalf("Start after Stop: %v, want ErrStopped", err)
	}
	if n := c.starts.Load(); n != 0 {
		t.Errorf("start function ran %d times", n)
	}
	<-c.base.Stopped() // closed: nothing ever ran
}

func TestBaseStartsOnceAndStopWaitsForGoroutines(t *testing.T) {
	t.Parallel()
	c := &ticker{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Start(context.Background()); err != nil {
				t.Errorf("Start: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := c.starts.Load(); n != 1 {
		t.Fatalf("start function ran %d times, want 1", n)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := c.ticks.Load()
	select {
	case <-c.base.Stopped():
	default:
		t.Fatal("Stop returned before the goroutine ended")
	}
	if c.ticks.Load() != after {
		t.Error("the goroutine still ran after Stop returned")
	}
	if err := c.Start(context.Background()); !errors.Is(err, lifecycle.ErrStopped) {
		t.Errorf("restart: %v, want ErrStopped", err)
	}
}

// A failed start leaves no goroutine behind and may be tried again.
func TestBaseFailedStartCanBeRetried(t *testing.T) {
	t.Parallel()
	var b lifecycle.Base
	var ended atomic.Bool
	boom := errors.New("boom")
	err := b.StartFunc(context.Background(), func(run context.Context) error {
		b.Go(func() { <-run.Done(); ended.Store(true) })
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed start returned %v", err)
	}
	if !ended.Load() {
		t.Fatal("the failed start's goroutine was not cancelled and waited for")
	}
	ran := false
	if err := b.StartFunc(context.Background(), func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("second start: ran %v, %v", ran, err)
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Stop is bounded by its context while a goroutine ignores cancellation,
// holds no lock while it waits (Start and Stopped answer meanwhile), and a
// later Stop succeeds once the goroutine ends.
func TestBaseStopBoundedAndLockFree(t *testing.T) {
	t.Parallel()
	var b lifecycle.Base
	release := make(chan struct{})
	if err := b.StartFunc(context.Background(), func(context.Context) error {
		b.Go(func() { <-release })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	done, stopping := b.StopInit()
	if !stopping {
		t.Fatal("StopInit on a running component did not report stopping")
	}
	// While the goroutine runs on, the state answers (no lock is held).
	if err := b.StartFunc(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, lifecycle.ErrStopped) {
		t.Errorf("Start while stopping: %v, want ErrStopped", err)
	}
	if b.Stopped() != done {
		t.Error("Stopped and StopInit return different channels")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with a stuck goroutine returned %v, want context.Canceled", err)
	}
	close(release)
	if err := b.Stop(context.Background()); err != nil {
		t.Fatalf("Stop once the goroutine ended: %v", err)
	}
}

// A Stop that arrives while the start function runs cancels its context and
// waits for it to return.
func TestBaseStopDuringStart(t *testing.T) {
	t.Parallel()
	var b lifecycle.Base
	inStart, stopCalled := make(chan struct{}), make(chan struct{})
	var sawCancel atomic.Bool
	started := make(chan error, 1)
	go func() {
		started <- b.StartFunc(context.Background(), func(run context.Context) error {
			close(inStart)
			<-stopCalled
			<-run.Done()
			sawCancel.Store(true)
			return nil
		})
	}()
	<-inStart
	done, stopping := b.StopInit()
	if !stopping {
		t.Error("StopInit on a starting component did not report stopping")
	}
	close(stopCalled)
	<-done
	if !sawCancel.Load() {
		t.Error("done closed before the start function returned")
	}
	if err := <-started; err != nil {
		t.Errorf("start: %v", err)
	}
	if _, stopping := b.StopInit(); stopping {
		t.Error("a second StopInit reported stopping")
	}
}

func TestBaseStress(t *testing.T) {
	t.Parallel()
	lifecycletest.Stress(t, func(testing.TB) lifecycle.Component { return &ticker{} })
}

func TestLoopStress(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	lifecycletest.Stress(t, func(testing.TB) lifecycle.Component {
		return &lifecycle.Loop{Name: "stress loop", Logger: logger, Step: lifecycle.Every(time.Millisecond, func(context.Context) {})}
	})
}

// A component that has ended is stopped, whatever the state of the
// caller's context: Stop does not pick at random between the two.
func TestStopOfAnEndedComponentWithAnEndedContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for i := range 200 {
		var b lifecycle.Base
		if err := b.Stop(ctx); err != nil {
			t.Fatalf("stop %d of a component that never started, context ended: %v", i, err)
		}
	}
}
