// Package storage writes the classifier's outputs: classified documents
// through the Elasticsearch bulk writer (package esbulk), history rows in
// the classifier's database, and outbox rows in the publisher's database.
// Raw documents are read and written through package rawindex.
package storage

import (
	"context"
	"log/slog"
	"strings"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/esbulk"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// MaxBulkBytesDefault bounds the body of one bulk request
// (CLASSIFIER_MAX_BULK_BYTES); see esbulk.MaxBytesDefault.
const MaxBulkBytesDefault = esbulk.MaxBytesDefault

// StoreConfig configures a ContentStore.
type StoreConfig struct {
	// MaxBulkBytes bounds the body of one bulk request; larger batches are
	// sent as several requests. Defaults to MaxBulkBytesDefault.
	MaxBulkBytes int
}

// ContentStore writes classified documents.
type ContentStore struct {
	es   *esclient.Client
	bulk *esbulk.Writer
}

// Ping asks the cluster for its health: the probe that proves an outage
// when a request's error does not tell (fault.ElasticsearchProved).
func (s *ContentStore) Ping(ctx context.Context) error { return esclient.Ping(s.es)(ctx) }

// NewContentStore returns a store over es with the default settings.
func NewContentStore(es *esclient.Client) *ContentStore {
	return NewContentStoreWith(es, StoreConfig{})
}

// NewContentStoreWith returns a store over es configured by cfg.
func NewContentStoreWith(es *esclient.Client, cfg StoreConfig) *ContentStore {
	return &ContentStore{es: es, bulk: esbulk.NewWriter(es, cfg.MaxBulkBytes)}
}

// WriteClassified indexes docs into their classified indices with _id equal
// to the raw id, so a rewrite after a crash replaces rather than duplicates.
// The result for docs[i] is results[i].
//
// A document refused because its index's strict mapping lacks one of its
// fields (the index was created from an older template, by an older
// replica during a rolling upgrade) is written again once after the
// missing fields are added to the content indices
// (contentindex.AddMissingFields): a field this version adds is no fault of
// the document.
func (s *ContentStore) WriteClassified(ctx context.Context, docs []*domain.ClassifiedContent) ([]esbulk.Result, error) {
	ops := make([]esbulk.Op, len(docs))
	for i, d := range docs {
		ops[i] = esbulk.Op{Action: "index", Index: d.Index, ID: d.ID, Body: d}
	}
	results, err := s.bulk.Run(ctx, "write classified", ops)
	if err != nil {
		return results, err
	}
	var again []int
	for i, r := range results {
		if r.Err != nil && strings.Contains(r.Err.Error(), "strict_dynamic_mapping_exception") {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return results, nil
	}
	// Another writer may have added the fields already: retry either way.
	contentindex.AddMissingFields(ctx, s.es, slog.New(slog.DiscardHandler))
	retry := make([]esbulk.Op, len(again))
	for j, i := range again {
		retry[j] = ops[i]
	}
	second, err := s.bulk.Run(ctx, "write classified", retry)
	if err != nil {
		return results, nil // the first answers stand: each of these documents failed with its own error
	}
	for j, i := range again {
		results[i] = second[j]
	}
	return results, nil
}
