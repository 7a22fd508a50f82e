package rawindex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/esclient"
)

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

// Get reads raw documents by id in one multi-get, each whole and with the
// version a conditional write needs. Documents that do not exist (or whose
// index does not) are returned in missing; any other refusal is an error.
func (s *Store) Get(ctx context.Context, refs []domain.DocKey) (found []*domain.RawContent, missing []domain.DocKey, err error) {
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
	if len(parsed.Docs) != len(refs) {
		return nil, nil, fmt.Errorf("get raw documents: %d answers for %d documents", len(parsed.Docs), len(refs))
	}
	for i, d := range parsed.Docs {
		if !d.Found {
			if len(d.Error) > 0 && string(d.Error) != "null" && !bytes.Contains(d.Error, []byte("index_not_found")) {
				return nil, nil, fmt.Errorf("get raw document %s/%s: %s", refs[i].Index, refs[i].ID, d.Error)
			}
			missing = append(missing, refs[i])
			continue
		}
		// A multi-get without source filtering: the source is whole.
		found = append(found, s.decode(ctx, hit{index: d.Index, id: d.ID, seqNo: d.SeqNo, primaryTerm: d.PrimaryTerm, source: d.Source, whole: true}))
	}
	return found, missing, nil
}
