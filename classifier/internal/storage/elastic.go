package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// StoreConfig configures a ContentStore.
type StoreConfig struct {
	// MaxBulkBytes bounds the body of one bulk request; larger batches are
	// sent as several requests. Defaults to MaxBulkBytesDefault.
	MaxBulkBytes int
}

// ContentStore writes classified documents and raw-document status changes.
type ContentStore struct {
	es  *elasticsearch.Client
	cfg StoreConfig
}

// Ping asks the cluster for its health: the probe that proves an outage
// when a request's error does not tell (fault.ElasticsearchProved).
func (s *ContentStore) Ping(ctx context.Context) error { return esclient.Ping(s.es)(ctx) }

// NewContentStore returns a store over es with the default settings.
func NewContentStore(es *elasticsearch.Client) *ContentStore {
	return NewContentStoreWith(es, StoreConfig{})
}

// NewContentStoreWith returns a store over es configured by cfg.
func NewContentStoreWith(es *elasticsearch.Client, cfg StoreConfig) *ContentStore {
	if cfg.MaxBulkBytes <= 0 {
		cfg.MaxBulkBytes = MaxBulkBytesDefault
	}
	return &ContentStore{es: es, cfg: cfg}
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
func (s *ContentStore) WriteClassified(ctx context.Context, docs []*domain.ClassifiedContent) ([]BulkItemResult, error) {
	ops := make([]bulkOp, len(docs))
	for i, d := range docs {
		ops[i] = bulkOp{action: "index", index: d.Index, id: d.ID, body: d}
	}
	results, err := runBulk(ctx, s.es, "write classified", ops, "", s.cfg.MaxBulkBytes)
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
	retry := make([]bulkOp, len(again))
	for j, i := range again {
		retry[j] = ops[i]
	}
	second, err := runBulk(ctx, s.es, "write classified", retry, "", s.cfg.MaxBulkBytes)
	if err != nil {
		return results, nil // the first answers stand: each of these documents failed with its own error
	}
	for j, i := range again {
		results[i] = second[j]
	}
	return results, nil
}

// StatusChange is a conditional status update of one claimed raw document.
type StatusChange struct {
	Raw    *domain.RawContent
	Status string
	// Reason is recorded in classification_error when the status is failed.
	Reason string
	// Doc is the classification, when the status is classified.
	Doc *domain.ClassifiedContent
}

// FlipStatus sets the status of claimed raw documents, each only if it is
// still at the version this replica claimed (if_seq_no/if_primary_term): a
// document taken over by another replica after the lease is left to it.
// Moving a document to classified is the commit point of the pipeline.
func (s *ContentStore) FlipStatus(ctx context.Context, changes []StatusChange) ([]BulkItemResult, error) {
	ops := make([]bulkOp, len(changes))
	for i, c := range changes {
		doc := map[string]any{"classification_status": c.Status}
		if c.Status == contentindex.StatusFailed {
			doc["classification_error"] = c.Reason
		}
		ops[i] = conditionalChange(c.Raw, doc)
	}
	return runBulk(ctx, s.es, "flip raw status", ops, "", s.cfg.MaxBulkBytes)
}

// conditionalChange sets fields of a raw document at the version this
// replica holds: the whole document with the fields set when its source is
// kept (an index operation, which Elasticsearch applies without reading the
// stored document), else a partial update.
func conditionalChange(d *domain.RawContent, fields map[string]any) bulkOp {
	seq, term := d.SeqNo, d.PrimaryTerm
	if d.Source != nil {
		if whole, err := withFields(d.Source, fields); err == nil {
			return bulkOp{action: "index", index: d.Index, id: d.ID, seqNo: &seq, term: &term, body: whole}
		}
	}
	return bulkOp{action: "update", index: d.Index, id: d.ID, seqNo: &seq, term: &term, body: map[string]any{"doc": fields}}
}

// ClaimResult is the outcome of claiming one document (the poller's claims
// in the lease table). Err is nil when this replica won the claim; a
// conflict (esclient.IsConflict) when another replica holds it.
type ClaimResult struct {
	Doc *domain.RawContent
	Err error
}

type mgetResponse struct {
	Docs []struct {
		Index       string          `json:"_index"`
		ID          string          `json:"_id"`
		Found       bool            `json:"found"`
		SeqNo       int64           `json:"_seq_no"`
		PrimaryTerm int64           `json:"_primary_term"`
		Source      json.RawMessage `json:"_source"`
		Error       json.RawMessage `json:"error"`
	} `json:"docs"`
}

// GetRaw reads raw documents by id in one multi-get, with the versions a
// claim needs. Documents that no longer exist are returned in missing.
func (s *ContentStore) GetRaw(ctx context.Context, refs []domain.DocKey) (found []*domain.RawContent, missing []domain.DocKey, err error) {
	if len(refs) == 0 {
		return nil, nil, nil
	}
	docs := make([]map[string]string, len(refs))
	for i, r := range refs {
		docs[i] = map[string]string{"_index": r.Index, "_id": r.ID}
	}
	body, err := json.Marshal(map[string]any{"docs": docs})
	if err != nil {
		return nil, nil, fmt.Errorf("get raw documents: %w", err)
	}
	res, err := s.es.Mget(bytes.NewReader(body), s.es.Mget.WithContext(ctx))
	if err := esclient.CheckResponse("get raw documents", res, err); err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	var parsed mgetResponse
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, nil, fmt.Errorf("get raw documents: decode: %w", err)
	}
	for i, d := range parsed.Docs {
		if !d.Found {
			if len(d.Error) > 0 && string(d.Error) != "null" && !bytes.Contains(d.Error, []byte("index_not_found")) {
				return nil, nil, fmt.Errorf("get raw document %s/%s: %s", refs[i].Index, refs[i].ID, d.Error)
			}
			missing = append(missing, refs[i])
			continue
		}
		raw, _ := domain.DecodeRaw(d.Index, d.ID, d.SeqNo, d.PrimaryTerm, d.Source)
		if raw.DecodeError == "" {
			raw.Source = d.Source // a multi-get without source filtering
		}
		found = append(found, raw)
	}
	return found, missing, nil
}
