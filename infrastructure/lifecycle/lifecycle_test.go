package lifecycle_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/lifecycle"
)

// journal records start and stop events across components.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}

type fake struct {
	name     string
	j        *journal
	startErr error
	stopErr  error
	hang     bool // Stop ignores its ctx and returns only when release closes
	release  chan struct{}
	stopCtx  bool // Stop waits for its ctx and returns its error
	onStart  func()
}

func (f *fake) Start(context.Context) error {
	f.j.add("start " + f.name)
	if f.onStart != nil {
		f.onStart()
	}
	return f.startErr
}

func (f *fake) Stop(ctx context.Context) error {
	f.j.add("stop " + f.name)
	switch {
	case f.hang:
		<-f.release
		return nil
	case f.stopCtx:
		<-ctx.Done()
		return ctx.Err()
	}
	return f.stopErr
}

var errBoom = errors.New("boom")

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		components func(j *journal) []*fake
		cancelled  bool // ctx is cancelled before Run starts (otherwise once the last component started)
		timeout    time.Duration
		wantEvents []string
		wantErr    []string // substrings of the error; nil means success
		wantIs     []error
	}{
		{
			name: "starts in order and stops in reverse",
			components: func(j *journal) []*fake {
				return []*fake{{name: "a", j: j}, {name: "b", j: j}, {name: "c", j: j}}
			},
			timeout:    time.Second,
			wantEvents: []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"},
		},
		{
			name: "start failure rolls back started components",
			components: func(j *journal) []*fake {
				return []*fake{{name: "a", j: j}, {name: "b", j: j}, {name: "c", j: j, startErr: errBoom}, {name: "d", j: j}}
			},
			timeout:    time.Second,
			wantEvents: []string{"start a", "start b", "start c", "stop b", "stop a"},
			wantErr:    []string{"start c: boom"},
			wantIs:     []error{errBoom},
		},
		{
			name: "stop errors are joined and every component is stopped",
			components: func(j *journal) []*fake {
				return []*fake{{name: "a", j: j, stopErr: errBoom}, {name: "b", j: j}, {name: "c", j: j, stopErr: errors.New("flush failed")}}
			},
			timeout:    time.Second,
			wantEvents: []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"},
			wantErr:    []string{"stop c: flush failed", "stop a: boom"},
			wantIs:     []error{errBoom},
		},
		{
			name: "hanging stop is abandoned at the deadline",
			components: func(j *journal) []*fake {
				return []*fake{{name: "a", j: j}, {name: "b", j: j, hang: true}, {name: "c", j: j}}
			},
			timeout:    time.Second,
			wantEvents: []string{"start a", "start b", "start c", "stop c", "stop b"},
			wantErr:    []string{"stop b: abandoned", "stop a: not stopped"},
			wantIs:     []error{context.DeadlineExceeded},
		},
		{
			name: "stop honouring the deadline reports it",
			components: func(j *journal) []*fake {
				return []*fake{{name: "a", j: j}, {name: "slow", j: j, stopCtx: true}}
			},
			timeout:    time.Second,
			wantEvents: []string{"start a", "start slow", "stop slow", "stop a"},
			wantErr:    []string{"stop slow: context deadline exceeded"},
			wantIs:     []error{context.DeadlineExceeded},
		},
		{
			name: "cancelled before start starts nothing",
			components: func(j *journal) []*fake {
				return []*fake{{name: "a", j: j}}
			},
			cancelled:  true,
			timeout:    time.Second,
			wantEvents: nil,
			wantErr:    []string{"start a: aborted"},
			wantIs:     []error{context.Canceled},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := &journal{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fakes := tt.components(j)
			var named []lifecycle.NamedComponent
			for _, f := range fakes {
				if f.hang {
					f.release = make(chan struct{})
					t.Cleanup(func() { close(f.release) })
				}
				named = append(named, lifecycle.Named(f.name, f))
			}
			if tt.cancelled {
				cancel()
			} else {
				// The shutdown begins once everything started (an event, not
				// a delay a loaded machine could outlast before the starts).
				fakes[len(fakes)-1].onStart = cancel
			}

			// A hanging Stop is released only when the test is over: Run
			// returning at all proves it gave up at its deadline.
			done := make(chan error, 1)
			go func() { done <- lifecycle.Run(ctx, slog.New(slog.DiscardHandler), tt.timeout, named...) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("Run did not return within a minute (shutdown timeout %s)", tt.timeout)
			}

			if got := j.list(); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events = %q, want %q", got, tt.wantEvents)
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Run() = %v, want nil", err)
				}
			} else if err == nil {
				t.Fatalf("Run() = nil, want error containing %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Run() = %v, want it to contain %q", err, want)
				}
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("Run() = %v, want errors.Is %v", err, target)
				}
			}
		})
	}
}

func TestRunWaitsForContext(t *testing.T) {
	t.Parallel()
	j := &journal{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- lifecycle.Run(ctx, slog.New(slog.DiscardHandler), time.Second, lifecycle.Named("a", &fake{name: "a", j: j}))
	}()
	// Wait for the start (however slow the machine), then see Run still
	// running: it returns only when ctx is done.
	deadline := time.Now().Add(time.Minute)
	for len(j.list()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned before ctx was done: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if got := j.list(); !slices.Equal(got, []string{"start a"}) {
		t.Errorf("events while running = %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if got := j.list(); !slices.Equal(got, []string{"start a", "stop a"}) {
		t.Errorf("events after shutdown = %q", got)
	}
}

func TestRunValidates(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	ok := lifecycle.Named("a", &fake{name: "a", j: &journal{}})
	tests := []struct {
		name       string
		logger     *slog.Logger
		timeout    time.Duration
		components []lifecycle.NamedComponent
		want       string
	}{
		{"no logger", nil, time.Second, []lifecycle.NamedComponent{ok}, "logger is required"},
		{"zero timeout", logger, 0, []lifecycle.NamedComponent{ok}, "shutdownTimeout must be positive"},
		{"nil component", logger, time.Second, []lifecycle.NamedComponent{ok, {Name: "b"}}, `component 1 ("b")`},
		{"unnamed component", logger, time.Second, []lifecycle.NamedComponent{{Component: ok.Component}}, `component 0 ("")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := lifecycle.Run(context.Background(), tt.logger, tt.timeout, tt.components...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run() = %v, want containing %q", err, tt.want)
			}
		})
	}
}
