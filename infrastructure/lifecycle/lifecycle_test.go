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
}

func (f *fake) Start(context.Context) error {
	f.j.add("start " + f.name)
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
		cancelled  bool // ctx is cancelled before Run starts (otherwise shortly after)
		timeout    time.Duration
		wantEvents []string
		wantErr    []string // substrings of the error; nil means success
		wantIs     []error
		maxTook    time.Duration
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
			timeout:    200 * time.Millisecond,
			wantEvents: []string{"start a", "start b", "start c", "stop c", "stop b"},
			wantErr:    []string{"stop b: abandoned", "stop a: not stopped"},
			wantIs:     []error{context.DeadlineExceeded},
			maxTook:    200*time.Millisecond + 400*time.Millisecond,
		},
		{
			name: "stop honouring the deadline reports it",
			components: func(j *journal) []*fake {
				return []*fake{{name: "a", j: j}, {name: "slow", j: j, stopCtx: true}}
			},
			timeout:    100 * time.Millisecond,
			wantEvents: []string{"start a", "start slow", "stop slow", "stop a"},
			wantErr:    []string{"stop slow: context deadline exceeded"},
			wantIs:     []error{context.DeadlineExceeded},
			maxTook:    100*time.Millisecond + 400*time.Millisecond,
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
			var named []lifecycle.NamedComponent
			for _, f := range tt.components(j) {
				if f.hang {
					f.release = make(chan struct{})
					t.Cleanup(func() { close(f.release) })
				}
				named = append(named, lifecycle.Named(f.name, f))
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancelled {
				cancel()
			} else {
				time.AfterFunc(20*time.Millisecond, cancel)
			}
			defer cancel()

			start := time.Now()
			err := lifecycle.Run(ctx, slog.New(slog.DiscardHandler), tt.timeout, named...)
			took := time.Since(start)

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
			if tt.maxTook > 0 && took > tt.maxTook {
				t.Errorf("Run took %s, want at most %s", took, tt.maxTook)
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
