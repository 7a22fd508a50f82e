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
	"math/rand/v2"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"go.opentelemetry.io/otel/trace"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// Defaults of Config.
const (
	PollIntervalDefault = 2 * time.Second
	BatchSizeDefault    = 100
	ClaimLeaseDefault   = 5 * time.Minute
	IndexPatternDefault = "*" + contentindex.RawSuffix
)

// Handler processes one claimed batch. It owns the documents until it
// returns: it must move each to classified or failed, or leave it claimed
// for the lease to return it.
type Handler func(ctx context.Context, batch []*domain.RawContent)

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
	handler Handler
	metrics *telemetry.Metrics
	tracer  trace.Tracer
	logger  *slog.Logger
	now     func() time.Time

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Poller; call Start to run it.
func New(cfg Config, es *elasticsearch.Client, handler Handler, metrics *telemetry.Metrics, tracer trace.Tracer, logger *slog.Logger) (*Poller, error) {
	cfg.setDefaults()
	if cfg.ReplicaID == "" {
		return nil, errors.New("new poller: ReplicaID is required")
	}
	if handler == nil {
		return nil, errors.New("new poller: handler is required")
	}
	return &Poller{cfg: cfg, es: es, store: storage.NewContentStore(es), handler: handler, metrics: metrics,
		tracer: tracer, logger: logger.With("component", "poller"), now: time.Now}, nil
}

// Start launches the poll loop. Starting a started poller does nothing.
func (p *Poller) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel != nil {
		return nil
	}
	// The loop's context is detached from ctx's cancellation so that only
	// Stop ends it; it keeps ctx's values.
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel, p.done = cancel, make(chan struct{})
	go p.run(loopCtx, p.done)
	p.logger.InfoContext(ctx, "poller started", "replica", p.cfg.ReplicaID, "index_pattern", p.cfg.IndexPattern,
		"batch_size", p.cfg.BatchSize, "poll_interval", p.cfg.PollInterval.String())
	return nil
}

// Stop ends the loop after the batch in hand and waits for it, bounded by ctx.
// Documents of an interrupted batch stay claimed and return after the lease.
func (p *Poller) Stop(ctx context.Context) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop poller: %w", ctx.Err())
	}
}

func (p *Poller) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	failures := 0
	for {
		n, err := p.PollOnce(ctx)
		wait := p.cfg.PollInterval
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			wait = min(p.cfg.PollInterval*time.Duration(1<<min(failures, 5)), time.Minute)
			p.logger.ErrorContext(ctx, "poll failed", "error", err, "retry_in", wait.String())
		case n >= p.cfg.BatchSize:
			failures = 0
			wait = 0 // a full batch: more is probably waiting
		default:
			failures = 0
		}
		if wait > 0 {
			wait -= time.Duration(rand.Int64N(int64(wait) / 5)) // jitter replicas apart
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// PollOnce claims up to BatchSize documents and runs the handler on those it
// won. It returns how many documents the search found.
func (p *Poller) PollOnce(ctx context.Context) (int, error) {
	ctx, span := p.tracer.Start(ctx, "classifier.poll")
	defer span.End()

	found, err := p.search(ctx)
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
		p.handler(ctx, won)
	}
	return len(found), nil
}

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

func (p *Poller) search(ctx context.Context) ([]*domain.RawContent, error) {
	expired := p.now().Add(-p.cfg.ClaimLease).UTC()
	query := map[string]any{
		"size":                p.cfg.BatchSize,
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
