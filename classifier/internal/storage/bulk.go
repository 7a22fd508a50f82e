// Package storage writes the classifier's outputs: classified documents and
// raw-status changes through the Elasticsearch bulk API, history rows in the
// classifier's database, and outbox rows in the publisher's database.
package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/north-cloud/infrastructure/esclient"
)

// bulkOp is one action of a bulk request.
type bulkOp struct {
	action string // index, update
	index  string
	id     string
	seqNo  *int64
	term   *int64
	body   any
}

// BulkItemResult is the outcome of one bulk action; Err is nil on success.
type BulkItemResult struct {
	ID          string
	Status      int
	SeqNo       int64
	PrimaryTerm int64
	Err         error
}

type bulkResponse struct {
	Errors bool `json:"errors"`
	Items  []map[string]struct {
		ID          string          `json:"_id"`
		Status      int             `json:"status"`
		SeqNo       int64           `json:"_seq_no"`
		PrimaryTerm int64           `json:"_primary_term"`
		Error       json.RawMessage `json:"error"`
	} `json:"items"`
}

// runBulk sends ops in one _bulk request and returns one result per op, in
// order. The request failing as a whole is an error; individual items that
// fail are reported in their result, so one bad document never fails the
// others.
func runBulk(ctx context.Context, es *elasticsearch.Client, op string, ops []bulkOp, refresh string) ([]BulkItemResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, o := range ops {
		meta := map[string]any{"_index": o.index, "_id": o.id}
		if o.seqNo != nil && o.term != nil {
			meta["if_seq_no"] = *o.seqNo
			meta["if_primary_term"] = *o.term
		}
		if err := enc.Encode(map[string]any{o.action: meta}); err != nil {
			return nil, fmt.Errorf("%s: encode action: %w", op, err)
		}
		if err := enc.Encode(o.body); err != nil {
			return nil, fmt.Errorf("%s: encode document %s: %w", op, o.id, err)
		}
	}
	opts := []func(*esapi.BulkRequest){es.Bulk.WithContext(ctx)}
	if refresh != "" {
		opts = append(opts, es.Bulk.WithRefresh(refresh))
	}
	res, err := es.Bulk(&buf, opts...)
	if err := esclient.CheckResponse(op, res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed bulkResponse
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("%s: decode bulk response: %w", op, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	if len(parsed.Items) != len(ops) {
		return nil, fmt.Errorf("%s: bulk answered %d items for %d actions", op, len(parsed.Items), len(ops))
	}
	results := make([]BulkItemResult, len(ops))
	for i, item := range parsed.Items {
		for _, r := range item { // one key: the action name
			results[i] = BulkItemResult{ID: r.ID, Status: r.Status, SeqNo: r.SeqNo, PrimaryTerm: r.PrimaryTerm}
			if r.Status >= 300 {
				results[i].Err = &esclient.ResponseError{Op: op + " " + ops[i].id, Status: r.Status, Body: string(r.Error)}
			}
		}
	}
	return results, nil
}
