package rawindex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/esclient"
)

// Search is one search of SearchPending: a raw index and its query.
type Search struct {
	Index string
	Query Pending
}

// Answer is one search's answer: its documents in order, or, when the
// index's search failed, the status and reason (Err) of its failure.
type Answer struct {
	Docs   []*domain.RawContent
	Status int
	Err    string
}

// Failed reports an answer whose search failed.
func (a Answer) Failed() bool { return a.Err != "" }

type msearchResponse struct {
	Responses []struct {
		Status int                   `json:"status"`
		Error  *esclient.ErrorObject `json:"error"`
		Hits   struct {
			Hits []struct {
				Index       string          `json:"_index"`
				ID          string          `json:"_id"`
				SeqNo       int64           `json:"_seq_no"`
				PrimaryTerm int64           `json:"_primary_term"`
				Source      json.RawMessage `json:"_source"`
				Routing     string          `json:"_routing"`
			} `json:"hits"`
		} `json:"hits"`
	} `json:"responses"`
}

// SearchPending sends the searches as one _msearch and returns one answer
// per search, in order. A missing index answers no documents; one index
// whose search fails fails its answer only. The error is that of the
// request as a whole.
//
// A document read whole (WithHTML) and stored without a custom routing
// keeps its source, so that its Flip is sent as the whole document; a
// document stored under a custom routing is changed by partial updates,
// which find it missing and are refused (it returns after its lease).
func (s *Store) SearchPending(ctx context.Context, searches []Search) ([]Answer, error) {
	if len(searches) == 0 {
		return nil, nil
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, sr := range searches {
		if err := enc.Encode(map[string]any{"index": sr.Index, "ignore_unavailable": true}); err != nil {
			return nil, fmt.Errorf("search pending: %w", err)
		}
		if err := enc.Encode(sr.Query.render()); err != nil {
			return nil, fmt.Errorf("search pending: %w", err)
		}
	}
	res, err := s.es.Msearch(&body, s.es.Msearch.WithContext(ctx))
	if err := esclient.CheckResponse("search pending", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed msearchResponse
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("search pending: decode: %w", err)
	}
	if len(parsed.Responses) != len(searches) {
		return nil, fmt.Errorf("search pending: %d answers for %d searches", len(parsed.Responses), len(searches))
	}
	out := make([]Answer, len(searches))
	for i, r := range parsed.Responses {
		if r.Error != nil {
			out[i] = Answer{Status: r.Status, Err: r.Error.String()}
			continue
		}
		out[i].Docs = make([]*domain.RawContent, 0, len(r.Hits.Hits))
		for _, h := range r.Hits.Hits {
			out[i].Docs = append(out[i].Docs, s.decode(ctx, hit{index: h.Index, id: h.ID, seqNo: h.SeqNo, primaryTerm: h.PrimaryTerm,
				source: h.Source, whole: searches[i].Query.WithHTML && h.Routing == ""}))
		}
	}
	return out, nil
}
