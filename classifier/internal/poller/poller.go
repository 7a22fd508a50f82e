// Package poller finds pending raw documents (and claims whose lease has
// expired) across the raw content indices, claims a batch for this replica
// and hands it to a batch handler.
package poller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/lifecycle"
)

// Defaults of Config.
const (
	PollIntervalDefault = 2 * time.Second
	BatchSizeDefault    = 100
	ClaimLeaseDefault   = 5 * time.Minute
	IndexPatternDefault = "*" + contentindex.RawSuffix
)

// Sink takes claimed documents: the batch processor's work queue.
type Sink interface {
	// Submit queues a document, with backpressure; on error the document
	// stays claimed and its lease returns it to the poll.
	Submit(ctx context.Context, doc *domain.RawContent) error
	// ShouldThrottle reports a work queue more than 80% full.
	ShouldThrottle() bool
	// FreeSlots is the room left in the work queue.
	FreeSlots() int
}

// Config configures a Poller.
type Config struct {
	// ReplicaID is written to claimed_by. Required.
	ReplicaID string
	// IndexPattern selects the raw indices. Defaults to IndexPatternDefault.
	IndexPattern string
	// PollInterval is the wait after an empty or partial poll.
	// Defaults to PollIntervalDefault.
	PollInterval time.Duration
	// BatchSize is the number of documents claimed per poll.
	// Defaults to BatchSizeDefault.
	BatchSize int
	// ClaimLease is how long a claim keeps other replicas away.
	// Defaults to ClaimLeaseDefault.
	ClaimLease time.Duration
}

func (c *Config) setDefaults() {
	if c.IndexPattern == "" {
		c.IndexPattern = IndexPatternDefault
	}
	if c.PollInterval <= 0 {
		c.PollInterval = PollIntervalDefault
	}
	if c.BatchSize <= 0 {
		c.BatchSize = BatchSizeDefault
	}
	if c.ClaimLease <= 0 {
		c.ClaimLease = ClaimLeaseDefault
	}
}

// Poller is a long-lived component with Start and Stop.
type Poller struct {
	cfg     Config
	es      *elasticsearch.Client
	store   *storage.ContentStore
	sink    Sink
	metrics *telemetry.Metrics
	tracer  trace.Tracer
	logger  *slog.Logger
	now     func() time.Time

	loop     lifecycle.Loop
	failures int // consecutive failed polls; touched by the loop only
}

// New returns a Poller; call Start to run it.
func New(cfg Config, es *elasticsearch.Client, sink Sink, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) (*Poller, error) {
	cfg.setDefaults()
	if cfg.ReplicaID == "" {
		return nil, errors.New("new poller: ReplicaID is required")
	}
	if sink == nil {
		return nil, errors.New("new poller: sink is required")
	}
	p := &Poller{cfg: cfg, es: es, store: storage.NewContentStore(es), sink: sink, metrics: metrics,
		tracer: tracer, logger: logger.With("component", "poller"), now: time.Now}
	p.loop = lifecycle.Loop{Name: "poller", Step: p.step, Logger: p.logger}
	return p, nil
}

// Start launches the poll loop. Starting a started poller does nothing.
func (p *Poller) Start(ctx context.Context) error {
	p.logger.InfoContext(ctx, "poller starting", "replica", p.cfg.ReplicaID, "index_pattern", p.cfg.IndexPattern,
		"batch_size", p.cfg.BatchSize, "poll_interval", p.cfg.PollInterval.String())
	return p.loop.Start(ctx)
}

// Stop ends the loop after the poll in hand and waits for it, bounded by
// ctx. Documents already submitted are the work queue's; none is lost.
func (p *Poller) Stop(ctx context.Context) error { return p.loop.Stop(ctx) }

// step polls once and returns the wait before the next poll: none after a
// full batch (more is probably waiting), a short one while the work queue
// is too full, a growing one after failures, the poll interval otherwise.
func (p *Poller) step(ctx context.Context) time.Duration {
	n, err := p.PollOnce(ctx)
	switch {
	case ctx.Err() != nil:
		return 0
	case errors.Is(err, errThrottled):
		return min(p.cfg.PollInterval, 50*time.Millisecond)
	case err != nil:
		p.failures++
		wait := min(p.cfg.PollInterval*time.Duration(1<<min(p.failures, 5)), time.Minute)
		p.logger.ErrorContext(ctx, "poll failed", "error", err, "retry_in", wait.String())
		return lifecycle.Jitter(wait)
	case n >= p.cfg.BatchSize:
		p.failures = 0
		return 0
	default:
		p.failures = 0
		return lifecycle.Jitter(p.cfg.PollInterval) // jitter keeps replicas apart
	}
}

// PollOnce claims up to BatchSize documents, never more than the work queue
// has room for, and submits those it won. It returns how many documents the
// search found; a throttled poll counts as a full one, so the loop comes
// back soon.
func (p *Poller) PollOnce(ctx context.Context) (int, error) {
	if p.sink.ShouldThrottle() {
		p.metrics.ThrottleCount.Add(ctx, 1)
		return 0, errThrottled
	}
	size := min(p.cfg.BatchSize, p.sink.FreeSlots())
	if size <= 0 {
		p.metrics.ThrottleCount.Add(ctx, 1)
		return 0, errThrottled
	}
	ctx, span := p.tracer.Start(ctx, "classifier.poll")
	defer span.End()

	found, err := p.search(ctx, size)
	if err != nil {
		return 0, err
	}
	if len(found) == 0 {
		return 0, nil
	}
	won, err := p.store.Claim(ctx, p.cfg.ReplicaID, found, p.now().UTC())
	if err != nil {
		return len(found), fmt.Errorf("claim: %w", err)
	}
	if len(won) > 0 {
		p.metrics.BatchSize.Record(ctx, int64(len(won)))
	}
	for _, doc := range won {
		if err := p.sink.Submit(ctx, doc); err != nil {
			// The document stays claimed; the lease returns it.
			p.logger.WarnContext(ctx, "work queue refused a claimed document; it returns after the claim lease",
				"content_id", doc.ID, "source", doc.SourceName, "error", err)
		}
	}
	if len(found) >= size {
		return p.cfg.BatchSize, nil // a full page: more is probably waiting
	}
	return len(found), nil
}

// errThrottled tells the loop the work queue is too full to poll.
var errThrottled = errors.New("work queue over 80% full")

type searchResponse struct {
	Hits struct {
		Hits []struct {
			Index       string          `json:"_index"`
			ID          string          `json:"_id"`
			SeqNo       int64           `json:"_seq_no"`
			PrimaryTerm int64           `json:"_primary_term"`
			Source      json.RawMessage `json:"_source"`
		} `json:"hits"`
	} `json:"hits"`
}

func (p *Poller) search(ctx context.Context, size int) ([]*domain.RawContent, error) {
	expired := p.now().Add(-p.cfg.ClaimLease).UTC()
	query := map[string]any{
		"size":                size,
		"seq_no_primary_term": true,
		"sort":                []any{map[string]any{"crawled_at": map[string]any{"order": "asc", "unmapped_type": "date"}}},
		"query": map[string]any{"bool": map[string]any{
			"minimum_should_match": 1,
			"should": []any{
				map[string]any{"term": map[string]any{"classification_status": contentindex.StatusPending}},
				map[string]any{"bool": map[string]any{"filter": []any{
					map[string]any{"term": map[string]any{"classification_status": contentindex.StatusProcessing}},
					map[string]any{"range": map[string]any{"claimed_at": map[string]any{"lt": expired}}},
				}}},
			},
		}},
	}
	body, err := json.Marshal(query)
	if err != nil {
		return nil, fmt.Errorf("search pending: %w", err)
	}
	res, err := p.es.Search(
		p.es.Search.WithContext(ctx),
		p.es.Search.WithIndex(p.cfg.IndexPattern),
		p.es.Search.WithBody(bytes.NewReader(body)),
		p.es.Search.WithIgnoreUnavailable(true),
		p.es.Search.WithAllowNoIndices(true),
	)
	if err := esclient.CheckResponse("search pending", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed searchResponse
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("search pending: decode: %w", err)
	}
	out := make([]*domain.RawContent, 0, len(parsed.Hits.Hits))
	for _, h := range parsed.Hits.Hits {
		// Decode each document on its own: one malformed _source must not
		// stall the poll for everyone else. It is claimed like any other and
		// failed by the pipeline with the decode error as its reason.
		raw := &domain.RawContent{Index: h.Index, SeqNo: h.SeqNo, PrimaryTerm: h.PrimaryTerm}
		if err := json.Unmarshal(h.Source, &raw.RawDocument); err != nil {
			raw.RawDocument = contentindex.RawDocument{}
			raw.DecodeError = err.Error()
		}
		if raw.ID == "" {
			raw.ID = h.ID
		}
		out = append(out, raw)
	}
	return out, nil
}
