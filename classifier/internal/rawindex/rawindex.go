// Package rawindex is the one owner of the raw content indices
// ({source}_raw_content): every read and write of raw documents goes
// through a Store.
//
//   - SearchPending: the poller's searches for pending documents, one
//     _msearch of typed queries (Pending), one per index and lane.
//   - Get: raw documents by id (the dead-letter retry worker).
//   - Scan: every document of some statuses, through a point in time (the
//     sweep, a reprocess).
//   - Flip: the conditional status change of a claimed document, the
//     pipeline's commit point (the committer, the sweep's quarantine).
//   - Requeue: the conditional reset to pending of a classified or failed
//     document (a reprocess).
//
// A document comes back from every read with the version the read returned
// (_seq_no, _primary_term) and is written only by a write conditional on
// that version (conditional): a document that changed since (a crawler
// rewrote it, another replica flipped it) is refused with ErrChanged, never
// written twice. Claims are rows of the lease table (package lease), not
// writes of the raw document: Flip is the one write of a claimed document.
//
// Writes go through the configured bulk writer (package esbulk), so the
// byte bound (CLASSIFIER_MAX_BULK_BYTES) and the split of a request refused
// as too large apply to every one of them.
package rawindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/esbulk"
	"github.com/north-cloud/infrastructure/esclient"
)

// Config configures a Store.
type Config struct {
	// ES holds the raw indices. Required.
	ES *esclient.Client
	// MaxBulkBytes bounds the body of one bulk request
	// (CLASSIFIER_MAX_BULK_BYTES). Defaults to esbulk.MaxBytesDefault.
	MaxBulkBytes int
	// Logger logs a document whose id field differs from its _id. Defaults
	// to discarding.
	Logger *slog.Logger
}

// Store reads and writes raw documents. It is safe for concurrent use.
type Store struct {
	es     *esclient.Client
	bulk   *esbulk.Writer
	logger *slog.Logger
}

// New returns a Store after checking cfg.
func New(cfg Config) (*Store, error) {
	if cfg.ES == nil {
		return nil, errors.New("new raw index store: ES is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Store{es: cfg.ES, bulk: esbulk.NewWriter(cfg.ES, cfg.MaxBulkBytes), logger: cfg.Logger.With("component", "rawindex")}, nil
}

// Ping asks the cluster for its health: the probe that proves an outage
// when a request's error does not tell (fault.ElasticsearchProved).
func (s *Store) Ping(ctx context.Context) error { return esclient.Ping(s.es)(ctx) }

// Exists reports whether the raw index exists.
func (s *Store) Exists(ctx context.Context, index string) (bool, error) {
	res, err := s.es.Indices.Exists([]string{index}, s.es.Indices.Exists.WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("raw index %s exists: %w", index, err)
	}
	res.Body.Close()
	switch {
	case res.StatusCode == 404:
		return false, nil
	case res.IsError():
		return false, fmt.Errorf("raw index %s exists: elasticsearch answered %d", index, res.StatusCode)
	}
	return true, nil
}

// hit is a raw document as a search, a multi-get or a scan returned it.
type hit struct {
	index       string
	id          string
	seqNo       int64
	primaryTerm int64
	source      []byte
	// whole is set when source is the whole _source (read without a source
	// filter, stored without a custom routing): a write may then send the
	// whole document (conditional).
	whole bool
}

// decode turns a read document into a raw document carrying the version
// the read returned: the one place a document's version token is taken
// from Elasticsearch. Its identity is its index and _id: an id field in
// _source that differs is ignored and logged. A _source that does not
// decode gives a document with DecodeError set, failed on its own by the
// pipeline, never a failed read.
func (s *Store) decode(ctx context.Context, h hit) *domain.RawContent {
	raw, sourceID := domain.DecodeRaw(h.index, h.id, h.seqNo, h.primaryTerm, h.source)
	if raw.DecodeError == "" && h.whole {
		raw.Source = h.source
	}
	if sourceID != "" && sourceID != h.id {
		s.logger.WarnContext(ctx, "raw document's id field differs from its _id; the _id is its identity",
			"index", h.index, "_id", h.id, "source_id", sourceID)
	}
	return raw
}

// conditional sets fields of a raw document at the version it was read at:
// the one place a write carries a document's version token. The whole
// document with the fields set when its source was read whole (an index
// operation, which Elasticsearch applies without reading the stored
// document), else a partial update.
func conditional(d *domain.RawContent, fields map[string]any) esbulk.Op {
	at := &esbulk.Version{SeqNo: d.SeqNo, PrimaryTerm: d.PrimaryTerm}
	if d.Source != nil {
		if whole, err := withFields(d.Source, fields); err == nil {
			return esbulk.Op{Action: "index", Index: d.Index, ID: d.ID, If: at, Body: whole}
		}
	}
	return esbulk.Op{Action: "update", Index: d.Index, ID: d.ID, If: at, Body: map[string]any{"doc": fields}}
}
