package speccompat_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/processor"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/testenv"

	// The design's packages: database (3.2) and classifier (3.4).
	database "github.com/north-cloud/classifier/internal/deadletter"
	classifier "github.com/north-cloud/classifier/internal/rules"
)

// The design's signatures, as it writes them. A name that changes its
// signature stops this file compiling.
var (
	// 3.1 Telemetry Package
	_ func(ctx context.Context) (*telemetry.Provider, error)                                                     = telemetry.NewProvider
	_ func(p *telemetry.Provider) http.Handler                                                                   = (*telemetry.Provider).Handler
	_ func(p *telemetry.Provider, ctx context.Context, source string, success bool, duration time.Duration)      = (*telemetry.Provider).RecordClassification
	_ func(p *telemetry.Provider, ctx context.Context, duration time.Duration, rulesEvaluated, rulesMatched int) = (*telemetry.Provider).RecordRuleMatch
	_ func(p *telemetry.Provider, ctx context.Context, createdAt time.Time)                                      = (*telemetry.Provider).RecordPollerLag

	// 3.2 Dead-Letter Queue
	_ func(db *sql.DB) *database.DeadLetterRepository                                                          = database.NewDeadLetterRepository
	_ func(r *database.DeadLetterRepository, ctx context.Context, entry *domain.DeadLetterEntry) error         = (*database.DeadLetterRepository).Enqueue
	_ func(r *database.DeadLetterRepository, ctx context.Context, limit int) ([]domain.DeadLetterEntry, error) = (*database.DeadLetterRepository).FetchRetryable
	_ func(r *database.DeadLetterRepository, ctx context.Context, contentID string) error                      = (*database.DeadLetterRepository).Remove
	_ func(r *database.DeadLetterRepository, ctx context.Context, contentID string) error                      = (*database.DeadLetterRepository).MarkExhausted
	_ func(r *database.DeadLetterRepository, ctx context.Context) (*database.DLQStats, error)                  = (*database.DeadLetterRepository).GetStats
	_ func(r *database.DeadLetterRepository, ctx context.Context) (map[string]int64, error)                    = (*database.DeadLetterRepository).CountBySource
	_                                                                                                          = database.DLQStats{Pending: 0, Exhausted: 0, Ready: 0, AvgRetries: 0, OldestEntry: (*time.Time)(nil)}

	// 3.3 Backpressure-Controlled Batch Processor
	_ func() processor.BatchProcessorConfig = processor.DefaultBatchProcessorConfig
	_ processor.ResultHandler               = func(ctx context.Context, result *processor.ProcessResult) {}
	_                                       = processor.ProcessResult{Content: (*domain.ClassifiedContent)(nil), RawItem: (*domain.RawContent)(nil), Error: error(nil), Duration: time.Duration(0)}
	_                                       = processor.BatchProcessorConfig{Concurrency: 10, MaxQueueDepth: 500, SubmitTimeout: 30 * time.Second}

	// 3.4 Trie-Based Rule Engine (the design passes a *telemetry.Provider;
	// see newTrieRuleEngine below for the call as it writes it)
	_ func(e *classifier.TrieRuleEngine, rules []*domain.ClassificationRule)        = (*classifier.TrieRuleEngine).UpdateRules
	_ func(e *classifier.TrieRuleEngine, title, body string) []classifier.RuleMatch = (*classifier.TrieRuleEngine).Match
	_ func(e *classifier.TrieRuleEngine) int                                        = (*classifier.TrieRuleEngine).RuleCount
	_ func(e *classifier.TrieRuleEngine) int                                        = (*classifier.TrieRuleEngine).KeywordCount
)

// newTrieRuleEngine is the design's call, with its argument types.
func newTrieRuleEngine(rules []*domain.ClassificationRule, tp *telemetry.Provider) *classifier.TrieRuleEngine {
	return classifier.NewTrieRuleEngine(rules, tp)
}

func newProvider(t *testing.T) *telemetry.Provider {
	t.Helper()
	tp, err := telemetry.NewProvider(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// scrape returns the provider's /metrics page.
func scrape(t *testing.T, tp *telemetry.Provider) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tp.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func wantSeries(t *testing.T, page string, series ...string) {
	t.Helper()
	for _, s := range series {
		if !strings.Contains(page, "\n"+s+"\n") {
			t.Errorf("/metrics lacks %q", s)
		}
	}
}

// The Record helpers write the design's metric names, as /metrics shows them.
func TestProviderRecordHelpers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tp := newProvider(t)
	tp.RecordClassification(ctx, "example_com", true, 20*time.Millisecond)
	tp.RecordClassification(ctx, "example_com", false, 30*time.Millisecond)
	tp.RecordPollerLag(ctx, time.Now().Add(-time.Minute))
	tp.RecordRuleMatch(ctx, time.Millisecond, 3, 1)
	wantSeries(t, scrape(t, tp),
		`classifier_documents_processed_total{source="example_com"} 1`,
		`classifier_documents_failed_total{error_code="UNKNOWN",source="example_com"} 1`,
		`classifier_processing_duration_seconds_count{source="example_com"} 2`,
		`classifier_poller_lag_seconds_count 1`,
		`classifier_rule_match_duration_seconds_count 1`,
		`classifier_rules_evaluated_total 3`,
		`classifier_rules_matched_total 1`,
	)

	// The design's callers guard with `if tp != nil`; a nil Provider records nothing.
	var none *telemetry.Provider
	none.RecordClassification(ctx, "example_com", true, time.Millisecond)
	none.RecordPollerLag(ctx, time.Now())
	none.RecordRuleMatch(ctx, time.Millisecond, 1, 1)
}

func crimeRule(id int64, topic string, keywords ...string) *domain.ClassificationRule {
	return &domain.ClassificationRule{ID: id, Name: topic, Topic: topic, Keywords: keywords, MinConfidence: 0.3, Priority: 1, Enabled: true}
}

// NewTrieRuleEngine matches whole words, records each match on the
// provider, and UpdateRules swaps the rule set; a refused set leaves the
// current one in use, and Err says why.
func TestTrieRuleEngine(t *testing.T) {
	t.Parallel()
	tp := newProvider(t)
	engine := newTrieRuleEngine([]*domain.ClassificationRule{crimeRule(1, "violent_crime", "shooting", "gunfire")}, tp)
	if err := engine.Err(); err != nil {
		t.Fatal(err)
	}
	title, body := "Shooting downtown", "Residents heard gunfire late on Friday."
	matches := engine.Match(title, body)
	if len(matches) != 1 || matches[0].Rule.Topic != "violent_crime" || matches[0].UniqueMatches != 2 {
		t.Fatalf("Match = %+v, want violent_crime with 2 keywords", matches)
	}
	if engine.RuleCount() != 1 || engine.KeywordCount() != 2 {
		t.Errorf("RuleCount, KeywordCount = %d, %d; want 1, 2", engine.RuleCount(), engine.KeywordCount())
	}
	if got := engine.Match("The project has begun", "No problem at all."); len(got) != 0 {
		t.Errorf("Match of text without whole keywords = %+v, want none", got)
	}
	wantSeries(t, scrape(t, tp), `classifier_rules_evaluated_total 2`, `classifier_rules_matched_total 1`,
		`classifier_rule_match_duration_seconds_count 2`)

	engine.UpdateRules([]*domain.ClassificationRule{crimeRule(2, "property_crime", "burglary", "stolen")})
	if err := engine.Err(); err != nil {
		t.Fatal(err)
	}
	if got := engine.Match("Burglary on Main Street", "A car was stolen."); len(got) != 1 || got[0].Rule.Topic != "property_crime" {
		t.Errorf("Match after UpdateRules = %+v, want property_crime", got)
	}
	if got := engine.Match(title, body); len(got) != 0 {
		t.Errorf("the replaced rule still matches: %+v", got)
	}

	engine.UpdateRules([]*domain.ClassificationRule{crimeRule(3, "a", "x"), crimeRule(3, "b", "y")})
	if !errors.Is(engine.Err(), classifier.ErrInvalidRule) {
		t.Errorf("Err after duplicate IDs = %v, want ErrInvalidRule", engine.Err())
	}
	if got := engine.Match("Burglary on Main Street", "A car was stolen."); len(got) != 1 {
		t.Errorf("a refused update replaced the rules: Match = %+v", got)
	}

	refused := newTrieRuleEngine([]*domain.ClassificationRule{{ID: 1, Topic: "x", Keywords: []string{"x"}, MinConfidence: 2, Enabled: true}}, nil)
	if !errors.Is(refused.Err(), classifier.ErrInvalidRule) || refused.RuleCount() != 0 {
		t.Errorf("NewTrieRuleEngine of an invalid rule: Err %v, %d rules; want ErrInvalidRule and none", refused.Err(), refused.RuleCount())
	}
}

// classifyFunc is a Pipeline from a function.
type classifyFunc func(*domain.RawContent) (*domain.ClassifiedContent, error)

func (f classifyFunc) Classify(raw *domain.RawContent) (*domain.ClassifiedContent, error) {
	return f(raw)
}

// DefaultBatchProcessorConfig is the design's defaults, and a ResultHandler
// receives every result of a running BatchProcessor as a ProcessResult.
func TestBatchProcessorResultHandler(t *testing.T) {
	t.Parallel()
	cfg := processor.DefaultBatchProcessorConfig()
	if cfg != (processor.BatchProcessorConfig{Concurrency: 10, MaxQueueDepth: 500, SubmitTimeout: 30 * time.Second}) {
		t.Errorf("DefaultBatchProcessorConfig() = %+v, want the design's 10, 500, 30s", cfg)
	}
	cfg.Concurrency = 2

	results := make(chan *processor.ProcessResult, 10)
	var handler processor.ResultHandler = func(ctx context.Context, result *processor.ProcessResult) {
		results <- result
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	boom := errors.New("no text")
	pipeline := classifyFunc(func(raw *domain.RawContent) (*domain.ClassifiedContent, error) {
		if raw.RawText == "" {
			return nil, boom
		}
		return &domain.ClassifiedContent{ID: raw.ID}, nil
	})
	tp := newProvider(t)
	b := processor.NewBatchProcessor(cfg, pipeline, handler.Output(ctx), tp.Metrics, tp.Tracer, testenv.Logger(t))
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	items := map[string]*domain.RawContent{}
	for i, text := range []string{"some text", "", "more text"} {
		item := &domain.RawContent{RawDocument: contentindex.RawDocument{ID: fmt.Sprintf("doc-%d", i), RawText: text}}
		items[item.ID] = item
		if err := b.Submit(ctx, item); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for range items {
		result := <-results
		if result.RawItem != items[result.RawItem.ID] {
			t.Errorf("RawItem %p is not the submitted document", result.RawItem)
		}
		switch result.RawItem.RawText {
		case "":
			if !errors.Is(result.Error, boom) || result.Content != nil || result.Code == "" {
				t.Errorf("failed %s: Error %v, Content %v, Code %q; want the pipeline's error and a code", result.RawItem.ID, result.Error, result.Content, result.Code)
			}
		default:
			if result.Error != nil || result.Content == nil || result.Content.ID != result.RawItem.ID {
				t.Errorf("classified %s: Error %v, Content %+v", result.RawItem.ID, result.Error, result.Content)
			}
		}
	}
}

// The design's repository calls, against the real Postgres: a content id
// that names one entry is acted on, one in several indices is refused.
func TestDeadLetterRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := dbtest.Migrated(t)
	repo := database.NewDeadLetterRepository(db)

	entry := domain.NewDeadLetterEntry("doc-1", "example_com", "example_com_raw_content", "es timeout", domain.ErrorCodeESTimeout)
	if err := repo.Enqueue(ctx, entry); err != nil {
		t.Fatal(err)
	}
	stats, err := repo.GetStats(ctx)
	if err != nil || stats.Pending != 1 || stats.Exhausted != 0 || stats.OldestEntry == nil {
		t.Fatalf("GetStats = %+v, %v; want 1 pending with its age", stats, err)
	}
	if bySource, err := repo.CountBySource(ctx); err != nil || bySource["example_com"] != 1 {
		t.Errorf("CountBySource = %v, %v", bySource, err)
	}

	// Not due before its first delay; due once it has passed, and then leased.
	if due, err := repo.FetchRetryable(ctx, 10); err != nil || len(due) != 0 {
		t.Fatalf("FetchRetryable before the delay = %d entries, %v; want none", len(due), err)
	}
	if _, err := db.Exec(`UPDATE dead_letter_queue SET next_retry_at = NOW() - INTERVAL '1 second'`); err != nil {
		t.Fatal(err)
	}
	due, err := repo.FetchRetryable(ctx, 10)
	if err != nil || len(due) != 1 || due[0].ContentID != "doc-1" || due[0].IndexName != "example_com_raw_content" {
		t.Fatalf("FetchRetryable = %+v, %v; want doc-1", due, err)
	}
	if again, err := repo.FetchRetryable(ctx, 10); err != nil || len(again) != 0 {
		t.Errorf("FetchRetryable took a leased entry again: %d entries, %v", len(again), err)
	}

	// The same id in a second index: the id alone names no one entry.
	other := domain.NewDeadLetterEntry("doc-1", "other_org", "other_org_raw_content", "panic", domain.ErrorCodeRulePanic)
	if err := repo.Enqueue(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := repo.MarkExhausted(ctx, "doc-1"); !errors.Is(err, database.ErrAmbiguousContentID) {
		t.Errorf("MarkExhausted of an id in two indices = %v, want ErrAmbiguousContentID", err)
	}
	if err := repo.Remove(ctx, "doc-1"); !errors.Is(err, database.ErrAmbiguousContentID) {
		t.Errorf("Remove of an id in two indices = %v, want ErrAmbiguousContentID", err)
	}
	if _, err := repo.Repository.Remove(ctx, other.Key()); err != nil {
		t.Fatal(err)
	}

	if err := repo.MarkExhausted(ctx, "doc-1"); err != nil {
		t.Fatal(err)
	}
	if stats, err := repo.GetStats(ctx); err != nil || stats.Pending != 0 || stats.Exhausted != 1 {
		t.Errorf("GetStats after MarkExhausted = %+v, %v; want 1 exhausted", stats, err)
	}
	if err := repo.Remove(ctx, "doc-1"); err != nil {
		t.Fatal(err)
	}
	if stats, err := repo.GetStats(ctx); err != nil || stats.Pending+stats.Exhausted != 0 || stats.OldestEntry != nil {
		t.Errorf("GetStats after Remove = %+v, %v; want an empty queue", stats, err)
	}
	if err := repo.Remove(ctx, "missing"); err != nil {
		t.Errorf("Remove of an id without an entry = %v, want nil", err)
	}
	if err := repo.MarkExhausted(ctx, "missing"); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("MarkExhausted of an id without an entry = %v, want ErrNotFound", err)
	}
}
