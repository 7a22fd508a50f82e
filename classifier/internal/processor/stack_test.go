package processor

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/north-cloud/classifier/internal/claim"
	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/loadgen"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/rawtest"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/storage"
	classtel "github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	infraoutbox "github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/telemetry"
	"github.com/north-cloud/infrastructure/testenv"
)

// env is what the integration tests share: real Elasticsearch and Postgres,
// a migrated classifier database, an outbox table and a unique source.
type env struct {
	es        *esclient.Client
	prefix    string
	source    string
	db        *sql.DB
	outbox    *sql.DB
	outboxDSN string
	metrics   *classtel.Metrics
	provider  *telemetry.Provider
	engine    *rules.Engine
}

func setup(t *testing.T) *env {
	t.Helper()
	es, prefix := testenv.Elasticsearch(t)
	db, _ := dbtest.Migrated(t)
	outboxDSN := testenv.Postgres(t)
	logger := testenv.Logger(t)
	ctx := context.Background()
	outbox, err := postgres.Open(ctx, postgres.Config{URL: outboxDSN}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outbox.Close() })
	if err := infraoutbox.ApplyTestSchema(ctx, outbox); err != nil {
		t.Fatal(err)
	}
	if err := contentindex.EnsureTemplates(ctx, es); err != nil {
		t.Fatal(err)
	}
	provider, err := telemetry.New(ctx, telemetry.Config{ServiceName: "classifier-test"})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := classtel.New(provider.Meter("test"), classtel.Gauges{})
	if err != nil {
		t.Fatal(err)
	}
	engine, err := rules.NewEngine(rules.MatcherAhoCorasick, []rules.Rule{
		{ID: 1, Topic: "violent_crime", Keywords: []string{"murder", "shooting", "assault"}, Priority: 10, Enabled: true},
		{ID: 2, Topic: "politics", Keywords: []string{"council", "mayor", "election"}, Priority: 5, Enabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{es: es, prefix: prefix, source: prefix + "_src", db: db, outbox: outbox, outboxDSN: outboxDSN, metrics: metrics, provider: provider, engine: engine}
}

// load writes n generated raw documents and returns their ids.
func (e *env) load(t *testing.T, n int) []string {
	t.Helper()
	gen := loadgen.NewGenerator(42)
	docs := make([]contentindex.RawDocument, n)
	ids := make([]string, n)
	for i := range docs {
		docs[i] = gen.Document(e.source, i)
		ids[i] = docs[i].ID
	}
	if err := loadgen.Load(context.Background(), e.es, docs, 500, nil); err != nil {
		t.Fatal(err)
	}
	e.refresh(t)
	return ids
}

func (e *env) refresh(t *testing.T) {
	t.Helper()
	res, err := e.es.Indices.Refresh(e.es.Indices.Refresh.WithIndex(e.prefix + "*"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
}

// replica is one classifier's processing stack, wired as main wires it.
type replica struct {
	poller    *poller.Poller
	processor *BatchProcessor
	urgent    *BatchProcessor
	committer *Committer
	heartbeat *claim.Heartbeat
	breakers  Breakers
	// The committer's stores that the tests use beyond the committer, as
	// the service's types.
	leases   *lease.Store
	raw      *rawindex.Store
	registry *claim.Registry
	// opened counts the times any of the replica's breakers opened.
	opened *atomic.Int64
}

func (e *env) replica(t *testing.T, id string, c Pipeline, leaseFor time.Duration) *replica {
	t.Helper()
	logger := testenv.Logger(t).With("replica", id)
	tracer := noop.NewTracerProvider().Tracer("test")
	if c == nil {
		p, err := pipeline.New(pipeline.Config{Topics: e.engine})
		if err != nil {
			t.Fatal(err)
		}
		c = p
	}
	registry := claim.NewRegistry()
	leases, err := lease.New(lease.Config{DB: e.db, Replica: id, Lease: leaseFor})
	if err != nil {
		t.Fatal(err)
	}
	raw := rawtest.Store(t, e.es)
	stores := Stores{
		Content:     storage.NewContentStore(e.es),
		Raw:         raw,
		History:     storage.NewHistoryRepository(e.db),
		Outbox:      storage.NewOutboxWriter(e.outbox, testenv.Logger(t)),
		DeadLetters: deadletter.NewRepository(e.db),
		Reputation:  reputation.NewRepository(e.db),
		Claims:      registry,
		Leases:      leases,
	}
	opened := new(atomic.Int64)
	onChange := func(name string, _, to breaker.State, cause error) {
		if to == breaker.Open {
			opened.Add(1)
			logger.Warn("breaker opened", "breaker", name, "cause", cause)
		}
	}
	breakers := Breakers{
		Elasticsearch: breaker.MustNew(breaker.Config{Name: "elasticsearch", Cooldown: 50 * time.Millisecond, OnChange: onChange}),
		Postgres:      breaker.MustNew(breaker.Config{Name: "postgres", Cooldown: 50 * time.Millisecond, OnChange: onChange}),
		Outbox:        breaker.MustNew(breaker.Config{Name: "outbox_postgres", Cooldown: 50 * time.Millisecond, OnChange: onChange}),
	}
	pattern := e.prefix + "*" + contentindex.RawSuffix
	com := NewCommitter(CommitterConfig{Batch: 50, Linger: 20 * time.Millisecond}, stores, breakers, e.metrics, tracer, logger)
	proc := NewBatchProcessor(BatchProcessorConfig{Concurrency: 4, MaxQueueDepth: 100, SubmitTimeout: 5 * time.Second}, c, com.Output(), e.metrics, tracer, logger)
	// Urgent documents (fresh: the tests' documents are) take their own
	// queue and commit worker, as in the service.
	urgent := NewBatchProcessor(BatchProcessorConfig{Concurrency: 2, MaxQueueDepth: 20, SubmitTimeout: 5 * time.Second}, c, com.UrgentOutput(), e.metrics, tracer, logger)
	hb, err := claim.NewHeartbeat(claim.HeartbeatConfig{ReplicaID: id, Interval: max(leaseFor/4, 10*time.Millisecond)},
		registry, leases, logger)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := poller.New(poller.Config{ReplicaID: id, IndexPattern: pattern,
		PollInterval: 50 * time.Millisecond, BatchSize: 25, Leases: leases, Raw: raw, MaxStalls: 3, Urgent: claim.TrackingSink{Sink: urgent, Registry: registry}},
		claim.TrackingSink{Sink: proc, Registry: registry}, e.metrics, tracer, logger)
	if err != nil {
		t.Fatal(err)
	}
	return &replica{poller: pol, processor: proc, urgent: urgent, committer: com, heartbeat: hb, breakers: breakers, opened: opened,
		leases: leases, raw: raw, registry: registry}
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []interface{ Start(context.Context) error }{r.heartbeat, r.committer, r.processor, r.urgent, r.poller} {
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { r.stop(t) })
}

// stop shuts the stack down in the order main does.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []interface{ Stop(context.Context) error }{r.poller, r.urgent, r.processor, r.committer, r.heartbeat} {
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
}

// statuses returns the classification status of every raw document.
func (e *env) statuses(t *testing.T) map[string]string {
	t.Helper()
	e.refresh(t)
	res, err := e.es.Search(e.es.Search.WithIndex(e.prefix+"*"+contentindex.RawSuffix), e.es.Search.WithSize(10000),
		e.es.Search.WithSource("classification_status", "classification_error"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		Hits struct {
			Hits []struct {
				ID     string `json:"_id"`
				Source struct {
					Status string `json:"classification_status"`
				} `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := decodeJSON(res.Body, &parsed); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, h := range parsed.Hits.Hits {
		out[h.ID] = h.Source.Status
	}
	return out
}

// waitStatuses waits until every document has left pending and processing.
func (e *env) waitSettled(t *testing.T, want int, timeout time.Duration) map[string]string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := e.statuses(t)
		settled := 0
		for _, s := range st {
			if s == contentindex.StatusClassified || s == contentindex.StatusFailed {
				settled++
			}
		}
		if settled == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d documents settled after %s: %v", settled, want, timeout, countValues(st))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func countValues(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, v := range m {
		out[v]++
	}
	return out
}

func (e *env) count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// metric returns the value of a counter line on /metrics (summed over labels).
func (e *env) metric(t *testing.T, name string) float64 {
	t.Helper()
	families, err := e.provider.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// panicOn is a pipeline that panics on one document: a poison document.
type panicOn struct {
	id    string
	inner Pipeline
}

func (p panicOn) Classify(raw *domain.RawContent) (*domain.ClassifiedContent, error) {
	if raw.ID == p.id {
		panic(fmt.Sprintf("poison document %s", strings.ToUpper(raw.ID)))
	}
	return p.inner.Classify(raw)
}

// rawDocs reads raw documents by id with their current versions.
func (e *env) rawDocs(t *testing.T, ids []string) []*domain.RawContent {
	t.Helper()
	refs := make([]domain.DocKey, len(ids))
	for i, id := range ids {
		refs[i] = domain.DocKey{Index: contentindex.RawIndex(e.source), ID: id}
	}
	found, missing, err := rawtest.Store(t, e.es).Get(context.Background(), refs)
	if err != nil || len(missing) > 0 {
		t.Fatalf("get raw: %v, missing %v", err, missing)
	}
	return found
}

func (e *env) countDocs(t *testing.T, index string) int {
	t.Helper()
	res, err := e.es.Count(e.es.Count.WithIndex(index))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var parsed struct {
		Count int `json:"count"`
	}
	if err := decodeJSON(res.Body, &parsed); err != nil {
		t.Fatal(err)
	}
	return parsed.Count
}
