package rulestore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/testenv"
)

// reloadDeadline only ends a test whose change never arrives. The
// hot-reload target (a change reaches the engine within 2 seconds) is
// measured by the classifier API's BenchmarkRuleEditReachesPlayground
// (scripts/bench.sh), not asserted here: a loaded machine stretches any
// window, and the tests wait for the event.
const reloadDeadline = time.Minute

// replica is one classifier replica's rule engine and the Watcher feeding it.
type replica struct {
	engine  *rules.Engine
	watcher *rulestore.Watcher
	reader  *sdkmetric.ManualReader
}

func startReplica(t *testing.T, b bundle, cfg rulestore.WatcherConfig, target rulestore.Updater) replica {
	t.Helper()
	engine, err := rules.NewEngine(rules.MatcherKindDefault, nil)
	if err != nil {
		t.Fatal(err)
	}
	if target == nil {
		target = engine
	}
	reader := sdkmetric.NewManualReader()
	cfg.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = b.dsn
	}
	w, err := rulestore.NewWatcher(cfg, b.repo, target, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testContext(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return replica{engine: engine, watcher: w, reader: reader}
}

func hasTopic(e *rules.Engine, text, topic string) bool {
	for _, m := range e.Match("", text) {
		if m.Rule.Topic == topic {
			return true
		}
	}
	return false
}

// waitAll polls until cond holds for every replica, and logs how long after
// the change was committed that took.
func waitAll(t *testing.T, what string, changed time.Time, replicas []replica, cond func(*rules.Engine) bool) {
	t.Helper()
	deadline := changed.Add(reloadDeadline)
	for i, r := range replicas {
		for !cond(r.engine) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: replica %d did not see the change within %s", what, i, reloadDeadline)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Logf("%s: every replica updated after %s", what, time.Since(changed).Round(time.Millisecond))
}

// TestWatcherHotReloadTwoReplicas runs two Watchers (two replicas, each with
// its own engine) over one database and checks that a created, updated,
// disabled, enabled and deleted rule reaches both engines within 2 seconds.
func TestWatcherHotReloadTwoReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	replicas := []replica{startReplica(t, b, rulestore.WatcherConfig{}, nil), startReplica(t, b, rulestore.WatcherConfig{}, nil)}
	for i, r := range replicas {
		if n := r.engine.RuleCount(); n != len(defaultTopics) {
			t.Fatalf("replica %d: %d rules after Start, want the %d defaults", i, n, len(defaultTopics))
		}
	}
	runHotReloadSteps(t, ctx, b, replicas)
}

// TestWatcherPollingFallback checks a replica whose LISTEN connection never
// comes up (it points at a closed port) still reloads within 2 seconds by
// polling the rule-set version.
func TestWatcherPollingFallback(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	deaf := rulestore.WatcherConfig{
		DatabaseURL: "postgres://nobody:nothing@127.0.0.1:1/none?sslmode=disable&connect_timeout=1",
		ListenWait:  100 * time.Millisecond,
	}
	replicas := []replica{startReplica(t, b, deaf, nil), startReplica(t, b, rulestore.WatcherConfig{}, nil)}
	runHotReloadSteps(t, ctx, b, replicas)
}

func runHotReloadSteps(t *testing.T, ctx context.Context, b bundle, replicas []replica) {
	t.Helper()
	// The steps time the propagation of a change, not the engine build: with
	// the default rules (about 900 keywords) each Aho-Corasick rebuild takes
	// about half a second of CPU, which a loaded test machine stretches past
	// the deadline. Start from an empty rule set.
	clearRules(t, b.db)
	waitAll(t, "clear", time.Now().Add(5*time.Second), replicas, func(e *rules.Engine) bool { return e.RuleCount() == 0 })
	in := rulestore.Input{Name: "marsupials", Topic: "wildlife", Keywords: []string{"quokka"}, MinConfidence: 0, Priority: 1, Enabled: true}
	rule, err := b.repo.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	waitAll(t, "create", changed, replicas, func(e *rules.Engine) bool { return hasTopic(e, "a quokka smiled", "wildlife") })

	in.Keywords = []string{"wombat"}
	if _, err := b.repo.Update(ctx, rule.ID, in); err != nil {
		t.Fatal(err)
	}
	changed = time.Now()
	waitAll(t, "update", changed, replicas, func(e *rules.Engine) bool {
		return hasTopic(e, "a wombat dug", "wildlife") && !hasTopic(e, "a quokka smiled", "wildlife")
	})

	if _, err := b.repo.SetEnabled(ctx, rule.ID, false); err != nil {
		t.Fatal(err)
	}
	changed = time.Now()
	waitAll(t, "disable", changed, replicas, func(e *rules.Engine) bool { return !hasTopic(e, "a wombat dug", "wildlife") })

	if _, err := b.repo.SetEnabled(ctx, rule.ID, true); err != nil {
		t.Fatal(err)
	}
	changed = time.Now()
	waitAll(t, "enable", changed, replicas, func(e *rules.Engine) bool { return hasTopic(e, "a wombat dug", "wildlife") })

	if err := b.repo.Delete(ctx, rule.ID); err != nil {
		t.Fatal(err)
	}
	changed = time.Now()
	waitAll(t, "delete", changed, replicas, func(e *rules.Engine) bool { return !hasTopic(e, "a wombat dug", "wildlife") })

	want, err := b.repo.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replicas {
		if v := r.watcher.Version(); v != want {
			t.Errorf("replica %d at version %d, want %d", i, v, want)
		}
		if got := reloads(t, r.reader, rulestore.ReloadSuccess); got < 2 {
			t.Errorf("replica %d: %d successful reloads counted", i, got)
		}
	}
}

// flakyUpdater refuses rule sets while failing is set, as an engine refuses
// an invalid rule set, and otherwise passes them to engine.
type flakyUpdater struct {
	engine  *rules.Engine
	failing atomic.Bool
}

func (f *flakyUpdater) Update(rs []rules.Rule) error {
	if f.failing.Load() {
		return fmt.Errorf("refused: %w", rules.ErrInvalidRule)
	}
	return f.engine.Update(rs)
}

// TestWatcherRejectedReloadKeepsRules checks that a rule set the engine
// refuses leaves the old rules in place, is counted once (not retried every
// poll), and that the next change loads normally.
func TestWatcherRejectedReloadKeepsRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testContext(t)
	engine, err := rules.NewEngine(rules.MatcherTokenIndex, nil)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyUpdater{engine: engine}
	r := startReplica(t, b, rulestore.WatcherConfig{PollInterval: 50 * time.Millisecond}, flaky)
	r.engine = engine
	startVersion := r.watcher.Version()

	flaky.failing.Store(true)
	if _, err := b.repo.Create(ctx, rulestore.Input{Name: "refused", Topic: "wildlife", Keywords: []string{"quokka"}, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, reloadDeadline, 5*time.Millisecond, "the rejected reload to be counted", func() bool {
		return reloads(t, r.reader, rulestore.ReloadRejected) > 0
	})
	if hasTopic(engine, "quokka", "wildlife") || r.watcher.Version() != startVersion {
		t.Fatal("a refused rule set reached the engine")
	}
	if engine.RuleCount() != len(defaultTopics) {
		t.Errorf("engine lost its rules: %d", engine.RuleCount())
	}

	flaky.failing.Store(false)
	if _, err := b.repo.Create(ctx, rulestore.Input{Name: "accepted", Topic: "wildlife", Keywords: []string{"wombat"}, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	waitAll(t, "after rejection", time.Now(), []replica{r}, func(e *rules.Engine) bool {
		return hasTopic(e, "wombat", "wildlife") && hasTopic(e, "quokka", "wildlife")
	})
	// 50 ms polls ran many times meanwhile: the refused version was not
	// retried.
	if got := reloads(t, r.reader, rulestore.ReloadRejected); got != 1 {
		t.Errorf("rejected reloads = %d, want 1", got)
	}
}

func TestWatcherStartFailsWithoutDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_ = b.db.Close() // the loader's pool is gone
	engine, err := rules.NewEngine(rules.MatcherNaive, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: b.dsn}, b.repo, engine, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testContext(t)); err == nil {
		t.Fatal("Start succeeded without a database")
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Errorf("Stop after failed Start: %v", err)
	}
}

func TestWatcherLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine, err := rules.NewEngine(rules.MatcherNaive, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rulestore.NewWatcher(rulestore.WatcherConfig{}, nil, nil, nil); err == nil {
		t.Error("NewWatcher accepted an empty config")
	}
	w, err := rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: b.dsn}, b.repo, engine, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Errorf("second Start: %v", err)
	}
	if err := w.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := w.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := w.Start(ctx); err == nil {
		t.Error("Start after Stop succeeded")
	}
	never, err := rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: b.dsn}, b.repo, engine, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := never.Stop(ctx); err != nil {
		t.Errorf("Stop before Start: %v", err)
	}
}

// The watcher keeps the start/stop contract when Start and Stop race from
// many goroutines: each Start loads the rules and opens a LISTEN connection
// that a concurrent Stop must close.
func TestWatcherStartStopStress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		engine, err := rules.NewEngine(rules.MatcherNaive, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: b.dsn, PollInterval: time.Millisecond}, b.repo, engine, testenv.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		return w
	})
}

// reloads returns classifier_rules_reload_total{result=result}.
func reloads(t *testing.T, reader *sdkmetric.ManualReader, result string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		if errors.Is(err, sdkmetric.ErrReaderShutdown) {
			return 0
		}
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "classifier_rules_reload_total" {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("classifier_rules_reload_total is %T", m.Data)
			}
			for _, dp := range sum.DataPoints {
				if v, ok := dp.Attributes.Value(attribute.Key("result")); ok && v.AsString() == result {
					return dp.Value
				}
			}
		}
	}
	return 0
}
