package rulestore_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/infrastructure/telemetry"
	"github.com/north-cloud/infrastructure/testenv"
)

// TestWatcherMetricNames checks the Watcher's metrics appear on /metrics
// under the names classifier/README.md documents, through the service's own
// exporter (which must not add or double suffixes).
func TestWatcherMetricNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tp, err := telemetry.New(t.Context(), telemetry.Config{ServiceName: "classifier"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	engine, err := rules.NewEngine(rules.MatcherTokenIndex, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: b.dsn, Meter: tp.Meter("classifier")}, b.repo, engine, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})

	rec := httptest.NewRecorder()
	tp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`classifier_rules_reload_total{result="success"} 1`,
		`classifier_rules_reload_duration_seconds_count{result="success"} 1`,
		fmt.Sprintf("classifier_rules_loaded %d", len(defaultTopics)),
		"classifier_rules_version ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		for _, line := range strings.Split(string(body), "\n") {
			if strings.Contains(line, "classifier_rules") {
				t.Log(line)
			}
		}
	}
}
