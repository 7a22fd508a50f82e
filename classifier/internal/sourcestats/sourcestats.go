// Package sourcestats answers, per source, what became of its documents:
// how many were classified, refused at the door (by the field that was
// refused), recorded as duplicates (by kind), published, dead-lettered,
// and how old its oldest pending document is.
//
// A source is the prefix of its raw index, {source}_raw_content. Every
// figure counts documents, not attempts: Elasticsearch documents (one per
// _id), dead-letter rows (one per document) and published_outcomes rows
// (one per document). The work is bounded: one Elasticsearch search with
// aggregations over every raw and classified index, and three grouped SQL
// statements whose results have one row per index (and field)
// (a published_outcomes row keeps its document's version after the
// duplicate windows forget its outcome: processor.Hygiene.Cleanup). The Dashboard's Sources page polls it, so a
// Reader computes at most one report at a time and serves it to every
// caller for CacheFor.
package sourcestats

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/lease"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// duplicateKindField is the kind of a classified duplicate
// (domain.DuplicateRef.Kind under duplicate_of): url or content.
const duplicateKindField = "duplicate_of.kind"

// Defaults of Config.
const (
	RawPatternDefault = "*" + contentindex.RawSuffix
	MaxIndicesDefault = 1000
	CacheForDefault   = 5 * time.Second
)

// Config configures a Reader.
type Config struct {
	// ES holds the raw and classified indices. Required.
	ES *esclient.Client
	// DB is the classifier's database (dead letters, published outcomes).
	// Required.
	DB *sql.DB
	// RawPattern selects the raw indices, as the poller's
	// CLASSIFIER_INDEX_PATTERN does (names, wildcards, -exclusions); their
	// classified twins are read with them. Defaults to RawPatternDefault.
	RawPattern string
	// MaxIndices bounds the indices one answer covers. Defaults to
	// MaxIndicesDefault.
	MaxIndices int
	// Clock dates the oldest pending document's age and the report's
	// freshness. Defaults to the system clock.
	Clock clock.Clock
	// CacheFor is how long a report is served to every caller before it is
	// computed again. Defaults to CacheForDefault; negative: every call
	// computes one (still one at a time).
	CacheFor time.Duration
}

// Reader computes the per-source figures, one report at a time, shared by
// concurrent callers and cached for CacheFor.
type Reader struct {
	cfg Config

	mu     sync.Mutex
	last   *Report
	lastAt time.Time
	flight chan struct{} // closed when the report being computed is done
}

// New returns a Reader after checking cfg.
func New(cfg Config) (*Reader, error) {
	if cfg.RawPattern == "" {
		cfg.RawPattern = RawPatternDefault
	}
	cfg.MaxIndices = config.PositiveOr(cfg.MaxIndices, MaxIndicesDefault)
	if cfg.CacheFor == 0 {
		cfg.CacheFor = CacheForDefault
	}
	var errs []error
	if cfg.ES == nil {
		errs = append(errs, errors.New("ES is required"))
	}
	if cfg.DB == nil {
		errs = append(errs, errors.New("DB is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new source stats: %w", err)
	}
	return &Reader{cfg: cfg}, nil
}

// Source is one source's figures.
type Source struct {
	// Source is the raw index's prefix; RawIndex the raw index.
	Source   string `json:"source"`
	RawIndex string `json:"raw_index"`
	// Processed counts the documents in the source's classified index:
	// every document classified at least once.
	Processed int64 `json:"processed"`
	// ByStatus counts the raw documents by classification_status
	// (pending, processing, classified, failed).
	ByStatus map[string]int64 `json:"by_status"`
	// Rejected are the documents refused at the door.
	Rejected Rejected `json:"rejected_at_door"`
	// Duplicates counts the classified documents recorded as duplicates,
	// by kind (url, content).
	Duplicates map[string]int64 `json:"duplicates"`
	// ByStrategy counts the source's documents by processing strategy
	// (admission.Strategy): the classified ones by the strategy recorded
	// on them (standard, metadata_only), and "refuse" for those refused at
	// the door (Rejected.Total).
	ByStrategy map[string]int64 `json:"by_strategy"`
	// Published counts the documents published at least once.
	Published int64 `json:"published"`
	// DeadLetters counts the source's documents in the dead-letter queue.
	DeadLetters int64 `json:"dead_letters"`
	// DLQRate is DeadLetters / Processed; nil when nothing was processed.
	DLQRate *float64 `json:"dlq_rate"`
	// OldestPendingCrawledAt is the smallest crawled_at of the pending raw
	// documents and OldestPendingAgeSeconds its age; nil when none is
	// pending.
	OldestPendingCrawledAt  *time.Time `json:"oldest_pending_crawled_at"`
	OldestPendingAgeSeconds *float64   `json:"oldest_pending_age_seconds"`
}

// Rejected counts the documents refused at the door: VALIDATION_ERROR
// dead letters of the door, by the raw document field that was refused
// ("url", "id", "raw_text", "document" for the document as a whole).
type Rejected struct {
	Total   int64            `json:"total"`
	ByField map[string]int64 `json:"by_field"`
}

// Report is every source's figures.
type Report struct {
	Sources []Source `json:"sources"`
	// Partial is true when some shards of the indices did not answer; the
	// Elasticsearch figures of their indices may then be low.
	Partial     bool      `json:"partial"`
	GeneratedAt time.Time `json:"generated_at"`
}

// Stats returns every source's figures (the report is shared: do not
// modify it): the last report while it is fresher than CacheFor, else a new
// one. Callers arriving while one is computed wait for it; when it fails,
// the next of them computes another.
func (r *Reader) Stats(ctx context.Context) (*Report, error) {
	for {
		r.mu.Lock()
		if r.last != nil && r.cfg.Clock.Now().Sub(r.lastAt) < r.cfg.CacheFor {
			rep := r.last
			r.mu.Unlock()
			return rep, nil
		}
		if wait := r.flight; wait != nil {
			r.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("source stats: %w", ctx.Err())
			}
		}
		done := make(chan struct{})
		r.flight = done
		r.mu.Unlock()
		rep, err := r.compute(ctx)
		r.mu.Lock()
		r.flight = nil
		if err == nil {
			r.last, r.lastAt = rep, r.cfg.Clock.Now()
		}
		r.mu.Unlock()
		close(done)
		return rep, err
	}
}

// compute computes every source's figures.
func (r *Reader) compute(ctx context.Context) (*Report, error) {
	now := r.cfg.Clock.Now().UTC()
	bySource := map[string]*Source{}
	get := func(rawIndex string) *Source {
		s := bySource[rawIndex]
		if s == nil {
			s = &Source{Source: strings.TrimSuffix(rawIndex, contentindex.RawSuffix), RawIndex: rawIndex,
				ByStatus: map[string]int64{}, Duplicates: map[string]int64{}, Rejected: Rejected{ByField: map[string]int64{}},
				ByStrategy: map[string]int64{}}
			bySource[rawIndex] = s
		}
		return s
	}
	partial, err := r.elastic(ctx, now, get)
	if err != nil {
		return nil, err
	}
	if err := r.postgres(ctx, get); err != nil {
		return nil, err
	}
	live, err := lease.Processing(ctx, r.cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("source stats: %w", err)
	}
	for raw := range live {
		if _, ok := rawIndexOf(raw); ok {
			get(raw)
		}
	}
	for _, s := range bySource {
		processingFromLeases(s, live[s.RawIndex])
	}
	out := &Report{Sources: make([]Source, 0, len(bySource)), Partial: partial, GeneratedAt: now}
	for _, s := range bySource {
		if s.Processed > 0 {
			rate := float64(s.DeadLetters) / float64(s.Processed)
			s.DLQRate = &rate
		}
		out.Sources = append(out.Sources, *s)
	}
	slices.SortFunc(out.Sources, func(a, b Source) int { return strings.Compare(a.RawIndex, b.RawIndex) })
	return out, nil
}

// processingFromLeases sets a source's processing count to the documents
// under a live claim (package lease), which are pending in the raw index:
// a claim is no longer written to the raw document. Documents a replica of
// an older version left in status processing are claimable again, so they
// count as pending.
func processingFromLeases(s *Source, live int64) {
	waiting := s.ByStatus[contentindex.StatusPending] + s.ByStatus[contentindex.StatusProcessing]
	delete(s.ByStatus, contentindex.StatusPending)
	delete(s.ByStatus, contentindex.StatusProcessing)
	if p := max(waiting-live, 0); p > 0 {
		s.ByStatus[contentindex.StatusPending] = p
	}
	if live > 0 {
		s.ByStatus[contentindex.StatusProcessing] = live
	}
}

// rawIndexOf maps a raw or classified index name to its raw index, and
// reports whether it is either.
func rawIndexOf(index string) (string, bool) {
	switch contentindex.TypeOf(index) {
	case contentindex.TypeRaw:
		return index, true
	case contentindex.TypeClassified:
		return contentindex.RawIndex(strings.TrimSuffix(index, contentindex.ClassifiedSuffix)), true
	default:
		return "", false
	}
}

// targets is the search target: the raw pattern's parts, each raw one with
// its classified twin; exclusions stay as they are and apply to both.
func targets(pattern string) string {
	var out []string
	for _, part := range strings.Split(pattern, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		out = append(out, part)
		if !strings.HasPrefix(part, "-") && strings.HasSuffix(part, contentindex.RawSuffix) {
			out = append(out, strings.TrimSuffix(part, contentindex.RawSuffix)+contentindex.ClassifiedSuffix)
		}
	}
	return strings.Join(out, ",")
}

type bucket struct {
	Key      string `json:"key"`
	DocCount int64  `json:"doc_count"`
}

type statsResponse struct {
	Shards struct {
		Failed int `json:"failed"`
	} `json:"_shards"`
	Aggregations struct {
		Indices struct {
			Buckets []struct {
				bucket
				Statuses struct {
					Buckets []bucket `json:"buckets"`
				} `json:"statuses"`
				Duplicates struct {
					Buckets []bucket `json:"buckets"`
				} `json:"duplicates"`
				Strategies struct {
					Buckets []bucket `json:"buckets"`
				} `json:"strategies"`
				Pending struct {
					Oldest struct {
						Value *float64 `json:"value"`
					} `json:"oldest"`
				} `json:"pending"`
			} `json:"buckets"`
		} `json:"indices"`
	} `json:"aggregations"`
}

// elastic reads the Elasticsearch figures of every raw and classified index
// in one search. It is the one read of raw indices outside rawindex: an
// aggregation over the raw and classified indices together (counts by
// status, never a document), which split between two owners would be two
// searches whose counts are not of one moment. An index without duplicate_of.kind (a raw index, a
// classified index written before duplicates were recorded) has no
// duplicate buckets.
func (r *Reader) elastic(ctx context.Context, now time.Time, get func(string) *Source) (partial bool, err error) {
	body, err := json.Marshal(map[string]any{
		"size":             0,
		"track_total_hits": false,
		"aggs": map[string]any{
			"indices": map[string]any{
				"terms": map[string]any{"field": "_index", "size": r.cfg.MaxIndices},
				"aggs": map[string]any{
					"statuses":   map[string]any{"terms": map[string]any{"field": "classification_status", "size": 10}},
					"duplicates": map[string]any{"terms": map[string]any{"field": duplicateKindField, "size": 10}},
					"strategies": map[string]any{"terms": map[string]any{"field": "processing_strategy", "size": 10}},
					"pending": map[string]any{
						"filter": map[string]any{"term": map[string]any{"classification_status": contentindex.StatusPending}},
						"aggs":   map[string]any{"oldest": map[string]any{"min": map[string]any{"field": "crawled_at"}}},
					},
				},
			},
		},
	})
	if err != nil {
		return false, fmt.Errorf("source stats: %w", err)
	}
	es := r.cfg.ES
	res, err := es.Search(es.Search.WithContext(ctx), es.Search.WithIndex(targets(r.cfg.RawPattern)),
		es.Search.WithBody(bytes.NewReader(body)), es.Search.WithIgnoreUnavailable(true),
		es.Search.WithAllowNoIndices(true), es.Search.WithExpandWildcards("open"))
	if err := esclient.CheckResponse("source stats", res, err); err != nil {
		return false, err
	}
	defer res.Body.Close()
	var parsed statsResponse
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return false, fmt.Errorf("source stats: decode: %w", err)
	}
	for _, b := range parsed.Aggregations.Indices.Buckets {
		raw, ok := rawIndexOf(b.Key)
		if !ok {
			continue
		}
		s := get(raw)
		if contentindex.TypeOf(b.Key) == contentindex.TypeClassified {
			s.Processed = b.DocCount
			for _, d := range b.Duplicates.Buckets {
				s.Duplicates[d.Key] += d.DocCount
			}
			for _, d := range b.Strategies.Buckets {
				s.ByStrategy[d.Key] += d.DocCount
			}
			continue
		}
		for _, st := range b.Statuses.Buckets {
			s.ByStatus[st.Key] = st.DocCount
		}
		if v := b.Pending.Oldest.Value; v != nil {
			oldest := time.UnixMilli(int64(*v)).UTC()
			age := max(now.Sub(oldest).Seconds(), 0)
			s.OldestPendingCrawledAt, s.OldestPendingAgeSeconds = &oldest, &age
		}
	}
	return parsed.Shards.Failed > 0, nil
}

// doorField extracts the refused field from a door refusal's message,
// which the committer stores as pipeline.ErrUnprocessable's text, ": ",
// then the admission.RejectionError ("url: missing").
func doorField() string {
	return "^" + regexp.QuoteMeta(pipeline.ErrUnprocessable.Error()) + `: ([a-z_]+): `
}

// postgres reads the dead letters, door refusals and publications of every
// index: each statement has one row per index (and refused field).
func (r *Reader) postgres(ctx context.Context, get func(string) *Source) error {
	type row struct {
		index, field string
		n            int64
	}
	query := func(q string, args ...any) ([]row, error) {
		rows, err := r.cfg.DB.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []row
		for rows.Next() {
			var x row
			if err := rows.Scan(&x.index, &x.field, &x.n); err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, rows.Err()
	}
	dead, err := query(`SELECT index_name, '', COUNT(*) FROM dead_letter_queue GROUP BY 1`)
	if err != nil {
		return fmt.Errorf("source stats: dead letters: %w", err)
	}
	for _, x := range dead {
		if raw, ok := rawIndexOf(x.index); ok {
			get(raw).DeadLetters += x.n
		}
	}
	door, err := query(`SELECT index_name, substring(error_message from $1), COUNT(*) FROM dead_letter_queue
		WHERE error_code = $2 AND error_message ~ $1 GROUP BY 1, 2`, doorField(), string(domain.ErrorCodeValidation))
	if err != nil {
		return fmt.Errorf("source stats: door refusals: %w", err)
	}
	for _, x := range door {
		if raw, ok := rawIndexOf(x.index); ok {
			s := get(raw)
			s.Rejected.Total += x.n
			s.Rejected.ByField[x.field] += x.n
			s.ByStrategy["refuse"] += x.n
		}
	}
	published, err := query(`SELECT index_name, '', COUNT(*) FROM published_outcomes GROUP BY 1`)
	if err != nil {
		return fmt.Errorf("source stats: published: %w", err)
	}
	for _, x := range published {
		if raw, ok := rawIndexOf(x.index); ok {
			get(raw).Published += x.n
		}
	}
	return nil
}
