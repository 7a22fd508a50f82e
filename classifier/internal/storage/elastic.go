package storage

import (
	"context"
	"time"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
)

// ContentStore writes classified documents and raw-document status changes.
type ContentStore struct {
	es *elasticsearch.Client
}

// NewContentStore returns a store over es.
func NewContentStore(es *elasticsearch.Client) *ContentStore {
	return &ContentStore{es: es}
}

// WriteClassified indexes docs into their classified indices with _id equal
// to the raw id, so a rewrite after a crash replaces rather than duplicates.
// The result for docs[i] is results[i].
func (s *ContentStore) WriteClassified(ctx context.Context, docs []*domain.ClassifiedContent) ([]BulkItemResult, error) {
	ops := make([]bulkOp, len(docs))
	for i, d := range docs {
		ops[i] = bulkOp{action: "index", index: d.Index, id: d.ID, body: d}
	}
	return runBulk(ctx, s.es, "write classified", ops, "")
}

// StatusChange is a conditional status update of one claimed raw document.
type StatusChange struct {
	Raw    *domain.RawContent
	Status string
	// Reason is recorded in classification_error when the status is failed.
	Reason string
}

// FlipStatus sets the status of claimed raw documents, each only if it is
// still at the version this replica claimed (if_seq_no/if_primary_term): a
// document taken over by another replica after the lease is left to it.
// Moving a document to classified is the commit point of the pipeline.
func (s *ContentStore) FlipStatus(ctx context.Context, changes []StatusChange) ([]BulkItemResult, error) {
	ops := make([]bulkOp, len(changes))
	for i, c := range changes {
		seq, term := c.Raw.SeqNo, c.Raw.PrimaryTerm
		doc := map[string]any{"classification_status": c.Status}
		if c.Status == contentindex.StatusFailed {
			doc["classification_error"] = c.Reason
		}
		ops[i] = bulkOp{action: "update", index: c.Raw.Index, id: c.Raw.ID, seqNo: &seq, term: &term, body: map[string]any{"doc": doc}}
	}
	return runBulk(ctx, s.es, "flip raw status", ops, "")
}

// Claim marks raw documents as processing by replica, each only if it is
// unchanged since it was read. It returns the documents this replica won, with
// their new versions; documents another replica claimed first are left out.
func (s *ContentStore) Claim(ctx context.Context, replica string, docs []*domain.RawContent, now time.Time) ([]*domain.RawContent, error) {
	ops := make([]bulkOp, len(docs))
	for i, d := range docs {
		seq, term := d.SeqNo, d.PrimaryTerm
		ops[i] = bulkOp{action: "update", index: d.Index, id: d.ID, seqNo: &seq, term: &term, body: map[string]any{"doc": map[string]any{
			"classification_status": contentindex.StatusProcessing,
			"claimed_by":            replica,
			"claimed_at":            now,
		}}}
	}
	// refresh=true makes the claim visible to the next poll at once, so the
	// poller does not read the same documents again and lose races to itself.
	results, err := runBulk(ctx, s.es, "claim raw documents", ops, "true")
	if err != nil {
		return nil, err
	}
	won := make([]*domain.RawContent, 0, len(docs))
	for i, r := range results {
		if r.Err != nil {
			continue
		}
		d := docs[i]
		d.SeqNo, d.PrimaryTerm = r.SeqNo, r.PrimaryTerm
		d.ClaimedBy, d.ClassificationStatus = replica, contentindex.StatusProcessing
		claimed := now
		d.ClaimedAt = &claimed
		won = append(won, d)
	}
	return won, nil
}
