package processor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	classtel "github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
)

// gate is a pipeline that blocks until released, then classifies trivially.
type gate struct{ release chan struct{} }

func (g gate) Classify(raw *domain.RawContent) (*domain.ClassifiedContent, error) {
	<-g.release
	if raw.URL == "" {
		return nil, pipeline.ErrUnprocessable
	}
	return &domain.ClassifiedContent{ID: raw.ID}, nil
}

func newProcessor(t *testing.T, c Pipeline, out chan Result, depth int) *BatchProcessor {
	t.Helper()
	metrics, err := classtel.New(noop.NewMeterProvider().Meter("t"), classtel.Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	return NewBatchProcessor(BatchProcessorConfig{Concurrency: 2, MaxQueueDepth: depth, SubmitTimeout: 50 * time.Millisecond},
		c, Output{C: out}, metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
}

func doc(id string) *domain.RawContent {
	return &domain.RawContent{RawDocument: contentindex.RawDocument{ID: id, URL: "https://x.test/" + id}}
}

// The queue is bounded: once it and the busy workers are full, Submit waits
// SubmitTimeout and gives up; ShouldThrottle reports the queue over 80%.
// The first seven submits may wait as long as it takes the two workers to
// take their documents (a loaded machine can take longer than the 50 ms
// SubmitTimeout to schedule them); the eighth finds no room.
func TestBatchProcessorBackpressure(t *testing.T) {
	t.Parallel()
	g := gate{release: make(chan struct{})}
	out := make(chan Result, 100)
	b := newProcessor(t, g, out, 5)
	if err := b.Submit(context.Background(), doc("early")); !errors.Is(err, ErrStopped) {
		t.Fatalf("Submit before Start = %v, want ErrStopped", err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for i := range 7 {
		if err := b.SubmitWithTimeout(context.Background(), doc(string(rune('a'+i))), time.Minute); err != nil {
			t.Fatalf("submit %d of 7 (2 in workers + 5 queued): %v", i+1, err)
		}
		accepted++
	}
	// Two workers hold one document each, five wait in the queue: no room.
	if err := b.Submit(context.Background(), doc("one-too-many")); !errors.Is(err, ErrQueueFull) {
		t.Errorf("submit with the workers busy and the queue full = %v, want ErrQueueFull", err)
	}
	if !b.ShouldThrottle() || b.FreeSlots() != 0 || b.QueueDepth() != 5 {
		t.Errorf("throttle=%t free=%d depth=%d, want throttled with a full queue", b.ShouldThrottle(), b.FreeSlots(), b.QueueDepth())
	}
	close(g.release)

	// Stop drains everything that was accepted: nothing is lost.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if len(out) != accepted {
		t.Errorf("results = %d, want one per accepted document (%d)", len(out), accepted)
	}
	if err := b.Submit(context.Background(), doc("late")); !errors.Is(err, ErrStopped) {
		t.Errorf("Submit after Stop = %v, want ErrStopped", err)
	}
}

// A Submit blocked on a full queue is released by Stop, not left hanging.
func TestBatchProcessorStopReleasesBlockedSubmit(t *testing.T) {
	t.Parallel()
	g := gate{release: make(chan struct{})}
	out := make(chan Result, 100)
	metrics, _ := classtel.New(noop.NewMeterProvider().Meter("t"), classtel.Gauges{})
	b := NewBatchProcessor(BatchProcessorConfig{Concurrency: 1, MaxQueueDepth: 1, SubmitTimeout: time.Hour},
		g, Output{C: out}, metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
	_ = b.Start(context.Background())
	_ = b.Submit(context.Background(), doc("a")) // taken by the worker
	_ = b.Submit(context.Background(), doc("b")) // queued
	var wg sync.WaitGroup
	var blocked error
	wg.Add(1)
	go func() { defer wg.Done(); blocked = b.Submit(context.Background(), doc("c")) }()
	time.Sleep(50 * time.Millisecond) // let it block on the full queue
	stopped := make(chan error, 1)
	go func() { stopped <- b.Stop(context.Background()) }()
	wg.Wait()
	if !errors.Is(blocked, ErrStopped) {
		t.Errorf("blocked Submit = %v, want ErrStopped", blocked)
	}
	close(g.release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Errorf("results = %d, want the 2 accepted documents", len(out))
	}
}

// Failures come back as results with their DLQ code; a panic becomes
// RULE_PANIC and the worker keeps going.
func TestBatchProcessorResultsCarryErrorCodes(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	close(release)
	out := make(chan Result, 10)
	b := newProcessor(t, panicOn{id: "poison", inner: gate{release: release}}, out, 10)
	_ = b.Start(context.Background())
	bad := doc("bad")
	bad.URL = ""
	for _, d := range []*domain.RawContent{doc("ok"), bad, doc("poison"), doc("ok2")} {
		if err := b.Submit(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	codes := map[string]domain.ErrorCode{}
	for len(out) > 0 {
		r := <-out
		codes[r.Raw.ID] = r.Code
	}
	want := map[string]domain.ErrorCode{"ok": "", "bad": domain.ErrorCodeValidation, "poison": domain.ErrorCodeRulePanic, "ok2": ""}
	for id, code := range want {
		if got, ok := codes[id]; !ok || got != code {
			t.Errorf("%s: code %q (present %t), want %q", id, got, ok, code)
		}
	}
}

// Stopping under a deadline shorter than the work in flight never panics:
// the batch processor's Stop times out with workers still busy, the
// committer stops anyway (it never closes its input), and the workers that
// finish later drop their results instead of sending on a closed channel.
// Their documents stay claimed, for the heartbeat to release at stop or the
// lease to return.
func TestStopUnderDeadlineDropsLateResultsWithoutPanic(t *testing.T) {
	t.Parallel()
	metrics, err := classtel.New(noop.NewMeterProvider().Meter("t"), classtel.Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	tracer := tracenoop.NewTracerProvider().Tracer("t")
	com := NewCommitter(CommitterConfig{Batch: 10, Linger: time.Millisecond}, Stores{}, Breakers{}, metrics, tracer, testenv.Logger(t))
	g := gate{release: make(chan struct{})}
	proc := NewBatchProcessor(BatchProcessorConfig{Concurrency: 4, MaxQueueDepth: 20, SubmitTimeout: time.Second},
		g, com.Output(), metrics, tracer, testenv.Logger(t))
	ctx := context.Background()
	for _, c := range []interface{ Start(context.Context) error }{com, proc} {
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		if err := proc.Submit(ctx, doc(string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if err := proc.Stop(short); err == nil {
		t.Fatal("processor stopped with four workers blocked; want a deadline error")
	}
	if err := com.Stop(ctx); err != nil {
		t.Fatalf("committer stop: %v", err)
	}
	close(g.release) // the workers finish after the committer is gone
	select {
	case <-proc.base.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("workers still blocked 10 s after the committer stopped")
	}
}

// submitting starts its processor and submits a few documents, so that
// Submit races Stop in the stress test.
type submitting struct{ *BatchProcessor }

func (s submitting) Start(ctx context.Context) error {
	err := s.BatchProcessor.Start(ctx)
	for i := range 4 {
		if serr := s.Submit(ctx, doc(string(rune('a'+i)))); serr != nil && !errors.Is(serr, ErrStopped) {
			return serr
		}
	}
	return err
}

// Start, Submit and Stop from many goroutines at once keep the contract: no
// error, no restart after a stop, no send on the closed queue, no race (run
// with -race); every Stop drains what was queued.
func TestBatchProcessorStartStopStress(t *testing.T) {
	t.Parallel()
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		out := make(chan Result, 1024)
		metrics, err := classtel.New(noop.NewMeterProvider().Meter("t"), classtel.Gauges{})
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		close(release)
		return submitting{NewBatchProcessor(BatchProcessorConfig{Concurrency: 3, MaxQueueDepth: 8, SubmitTimeout: time.Second},
			gate{release: release}, Output{C: out}, metrics, tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))}
	})
}

// The committer keeps the same contract; a committer without results to
// commit needs no store.
func TestCommitterStartStopStress(t *testing.T) {
	t.Parallel()
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		metrics, err := classtel.New(noop.NewMeterProvider().Meter("t"), classtel.Gauges{})
		if err != nil {
			t.Fatal(err)
		}
		return NewCommitter(CommitterConfig{Batch: 4, Linger: time.Millisecond, Workers: 3}, Stores{}, Breakers{}, metrics,
			tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
	})
}

// While every commit worker is busy, the batch in hand keeps taking results
// (up to Batch), so a loaded committer sends fewer, fuller bulk requests.
func TestBatchGrowsWhileTheWorkersAreBusy(t *testing.T) {
	t.Parallel()
	metrics, err := classtel.New(noop.NewMeterProvider().Meter("t"), classtel.Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCommitter(CommitterConfig{Batch: 10, Linger: time.Millisecond, Workers: 1}, Stores{}, Breakers{}, metrics,
		tracenoop.NewTracerProvider().Tracer("t"), testenv.Logger(t))
	run, cancel := context.WithCancel(context.Background())
	in := make(chan Result)
	batches := make(chan []Result) // nobody takes a batch yet: the worker is busy
	gathered := make(chan struct{})
	go func() { c.gather(run, in, batches); close(gathered) }()

	sent := make(chan struct{})
	go func() {
		for i := range 7 {
			in <- Result{Raw: doc(string(rune('a' + i)))}
		}
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("results not taken while the worker was busy")
	}
	if b := <-batches; len(b) != 7 {
		t.Errorf("first batch has %d results, want all 7 that came while the worker was busy", len(b))
	}
	cancel()
	for range batches {
	}
	<-gathered
}
