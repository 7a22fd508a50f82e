package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// Renew moves the lease of claimed documents forward (claimed_at = now),
// each only if it is still at the version this replica holds. On success
// the document's SeqNo and PrimaryTerm are updated to the new version; the
// result of docs[i] is results[i]. A 409 means another replica took the
// document over: the caller must let it go.
func (s *ContentStore) Renew(ctx context.Context, docs []*domain.RawContent, now time.Time) ([]BulkItemResult, error) {
	ops := make([]bulkOp, len(docs))
	for i, d := range docs {
		ops[i] = conditionalChange(d, map[string]any{"claimed_at": now})
	}
	results, err := runBulk(ctx, s.es, "renew claims", ops, "", s.cfg.MaxBulkBytes)
	if err != nil {
		return nil, err
	}
	for i, r := range results {
		if r.Err == nil {
			docs[i].SeqNo, docs[i].PrimaryTerm, docs[i].Source = r.SeqNo, r.PrimaryTerm, sourceOf(ops[i])
		}
	}
	return results, nil
}

// Release returns claimed documents to pending, each only if it is still at
// the version this replica holds, so that they are polled again at once
// instead of after the lease.
func (s *ContentStore) Release(ctx context.Context, docs []*domain.RawContent) ([]BulkItemResult, error) {
	ops := make([]bulkOp, len(docs))
	for i, d := range docs {
		ops[i] = conditionalChange(d, map[string]any{"classification_status": contentindex.StatusPending, "claimed_by": nil, "claimed_at": nil})
	}
	return runBulk(ctx, s.es, "release claims", ops, "true", s.cfg.MaxBulkBytes)
}

// ClaimedBy returns up to limit documents in status processing claimed by
// replica in the indices matching pattern, with the versions Release needs.
// A replica with a stable CLASSIFIER_ID uses it at start to release the
// claims its previous run left behind.
func (s *ContentStore) ClaimedBy(ctx context.Context, pattern, replica string, limit int) ([]*domain.RawContent, error) {
	query := map[string]any{
		"size":                limit,
		"seq_no_primary_term": true,
		"_source":             []string{"claimed_by", "claimed_at", "source_name"},
		"query": map[string]any{"bool": map[string]any{"filter": []any{
			map[string]any{"term": map[string]any{"classification_status": contentindex.StatusProcessing}},
			map[string]any{"term": map[string]any{"claimed_by": replica}},
		}}},
	}
	body, err := json.Marshal(query)
	if err != nil {
		return nil, fmt.Errorf("find own claims: %w", err)
	}
	res, err := s.es.Search(
		s.es.Search.WithContext(ctx),
		s.es.Search.WithIndex(pattern),
		s.es.Search.WithBody(bytes.NewReader(body)),
		s.es.Search.WithIgnoreUnavailable(true),
		s.es.Search.WithAllowNoIndices(true),
	)
	if err := esclient.CheckResponse("find own claims", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed struct {
		Hits struct {
			Hits []struct {
				Index       string `json:"_index"`
				ID          string `json:"_id"`
				SeqNo       int64  `json:"_seq_no"`
				PrimaryTerm int64  `json:"_primary_term"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("find own claims: decode: %w", err)
	}
	out := make([]*domain.RawContent, 0, len(parsed.Hits.Hits))
	for _, h := range parsed.Hits.Hits {
		d := &domain.RawContent{Index: h.Index, SeqNo: h.SeqNo, PrimaryTerm: h.PrimaryTerm}
		d.ID = h.ID
		out = append(out, d)
	}
	return out, nil
}
