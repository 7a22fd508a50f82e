package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrStopped is returned by Start on a component that was stopped: a
// stopped component does not start again (make a new one).
var ErrStopped = errors.New("component was stopped")

// Base is the start/stop state every long-lived background component
// embeds, so that each has the same contract: Start is idempotent, Stop is
// idempotent and safe before Start, a stopped component does not start
// again, Start and Stop may be called from many goroutines at once, and no
// lock is held while Stop waits for the component's goroutines to end.
//
// A component's Start calls StartFunc with the function that sets it up;
// that function launches the component's goroutines with Go, on the run
// context it receives, which Stop cancels. A component whose stop needs
// nothing more than that cancel uses Base.Stop as its own; one that drains
// in phases calls StopInit and waits on the channel it returns.
//
// The zero Base is ready to use. It must not be copied after first use.
type Base struct {
	mu    sync.Mutex
	cond  *sync.Cond // signalled when goroutines reaches zero; uses mu
	state baseState
	// cancel cancels the run context of the current start.
	cancel context.CancelFunc
	// inStart is true while a start function runs.
	inStart bool
	// goroutines counts the goroutines launched with Go still running.
	goroutines int
	// done is closed once the component is stopped, no start function is
	// running and every goroutine has ended. It is made on first use.
	done       chan struct{}
	doneClosed bool
}

type baseState int

const (
	stateIdle baseState = iota
	stateStarting
	stateRunning
	stateStopped
)

// StartFunc starts the component once. The first call marks it starting and
// runs start with a run context that is detached from ctx (a shutdown
// signal reaches the component through Stop, not through Start's context)
// and cancelled by Stop. If start fails, the run context is cancelled, the
// goroutines start launched are waited for, and the component can be
// started again. Later calls return nil while the component is starting or
// running, and ErrStopped once it was stopped.
//
// start runs without the lock held: a concurrent Stop cancels the run
// context at once and then waits for start to return.
func (b *Base) StartFunc(ctx context.Context, start func(run context.Context) error) error {
	b.mu.Lock()
	switch b.state {
	case stateStopped:
		b.mu.Unlock()
		return ErrStopped
	case stateStarting, stateRunning:
		b.mu.Unlock()
		return nil
	}
	b.state, b.inStart = stateStarting, true
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel = cancel
	b.mu.Unlock()

	err := start(run)

	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		cancel()
		b.waitGoroutinesLocked()
	}
	b.inStart = false
	switch {
	case b.state == stateStopped:
		b.closeDoneIfIdleLocked()
	case err != nil:
		b.state = stateIdle
	default:
		b.state = stateRunning
	}
	return err
}

// waitGoroutinesLocked waits, with the lock released while it waits, until
// every goroutine launched with Go has ended.
func (b *Base) waitGoroutinesLocked() {
	if b.cond == nil {
		b.cond = sync.NewCond(&b.mu)
	}
	for b.goroutines > 0 {
		b.cond.Wait()
	}
}

// Go runs f in a goroutine the component owns: Stop waits for it. Call it
// from the start function or from a goroutine Go launched; f must return
// once the run context is cancelled. Once the component has stopped and its
// goroutines have ended, Go does not run f and returns false.
func (b *Base) Go(f func()) bool {
	b.mu.Lock()
	if b.doneClosed {
		b.mu.Unlock()
		return false
	}
	b.goroutines++
	b.mu.Unlock()
	go func() {
		defer b.exit()
		f()
	}()
	return true
}

func (b *Base) exit() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.goroutines--
	if b.goroutines == 0 {
		if b.cond != nil {
			b.cond.Broadcast()
		}
		b.closeDoneIfIdleLocked()
	}
}

// doneLocked returns the done channel, making it on first use.
func (b *Base) doneLocked() chan struct{} {
	if b.done == nil {
		b.done = make(chan struct{})
	}
	return b.done
}

func (b *Base) closeDoneIfIdleLocked() {
	if b.state == stateStopped && !b.inStart && b.goroutines == 0 && !b.doneClosed {
		close(b.doneLocked())
		b.doneClosed = true
	}
}

// StopInit marks the component stopped and cancels its run context. It
// returns a channel that is closed once the start in progress (if any) has
// returned and every goroutine launched with Go has ended (at once for a
// component that never started), and whether this call is the one that
// stopped a started component: a component that drains in phases does its
// phases only then, and otherwise just waits on the channel.
func (b *Base) StopInit() (done <-chan struct{}, stopping bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	stopping = b.state == stateStarting || b.state == stateRunning
	if b.state != stateStopped {
		b.state = stateStopped
		if b.cancel != nil {
			b.cancel()
		}
	}
	ch := b.doneLocked()
	b.closeDoneIfIdleLocked()
	return ch, stopping
}

// Stop cancels the run context and waits, bounded by ctx, until the
// component's goroutines have ended. It is idempotent, safe before Start and
// safe to call from many goroutines; every call waits. A component that has
// ended is reported stopped even when ctx has ended too.
func (b *Base) Stop(ctx context.Context) error {
	done, _ := b.StopInit()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		select { // select picks at random between two ready cases
		case <-done:
			return nil
		default:
			return fmt.Errorf("stop: goroutines still running: %w", ctx.Err())
		}
	}
}

// Stopped returns a channel closed once the component has stopped and its
// goroutines have ended.
func (b *Base) Stopped() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.doneLocked()
}
