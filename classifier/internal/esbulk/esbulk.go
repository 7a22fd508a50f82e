// Package esbulk is the classifier's one Elasticsearch bulk writer: every
// bulk request of the classifier (classified documents, raw-document status
// changes and requeues) goes through a Writer, so each is bounded in bytes
// (CLASSIFIER_MAX_BULK_BYTES) and a request refused as too large (413, or a
// 429 because it alone nearly fills the node's indexing-pressure budget) is
// split in halves and sent again, everywhere.
package esbulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/esclient"
)

// Version is the version token of a document as a read returned it
// (_seq_no, _primary_term): an action carrying it is applied only if the
// document is still at that version, and refused with 409 otherwise.
type Version struct {
	SeqNo       int64
	PrimaryTerm int64
}

// Op is one action of a bulk request.
type Op struct {
	// Action is "index" or "update".
	Action string
	Index  string
	ID     string
	// If, when set, makes the action conditional on the document's version
	// (if_seq_no, if_primary_term).
	If *Version
	// Body is the document (index) or the update (update): a
	// json.RawMessage is sent as it is, anything else is encoded.
	Body any
}

// Result is the outcome of one bulk action; Err is nil on success.
type Result struct {
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

// MaxBytesDefault bounds the body of one bulk request: well under
// Elasticsearch's http.max_content_length (100 MB by default), so a batch of
// large documents is sent as several requests instead of being refused.
const MaxBytesDefault = 16 << 20

// Writer sends bulk requests of at most MaxBytes each. It is safe for
// concurrent use.
type Writer struct {
	es       *esclient.Client
	maxBytes int
}

// NewWriter returns a writer over es whose requests hold at most maxBytes
// (MaxBytesDefault when not positive).
func NewWriter(es *esclient.Client, maxBytes int) *Writer {
	maxBytes = config.PositiveOr(maxBytes, MaxBytesDefault)
	return &Writer{es: es, maxBytes: maxBytes}
}

// MaxBytes returns the bound of one request's body.
func (w *Writer) MaxBytes() int { return w.maxBytes }

// Run sends ops as _bulk requests of at most MaxBytes each (a single op
// larger than that goes alone) and returns one result per op, in order.
// A request refused as too large (413) is split in halves and sent again;
// a single op still refused gets a 413 item result. Any other failure of a
// whole request is an error wrapped with op. Individual items that fail
// are reported in their result, so one bad document never fails the
// others.
func (w *Writer) Run(ctx context.Context, op string, ops []Op) ([]Result, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	es, maxBytes := w.es, w.maxBytes
	lines := make([][]byte, len(ops))
	for i, o := range ops {
		b, err := encodeOp(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		lines[i] = b
	}
	results := make([]Result, len(ops))
	for from := 0; from < len(ops); {
		to, size := from, 0
		for to < len(ops) && (to == from || size+len(lines[to]) <= maxBytes) {
			size += len(lines[to])
			to++
		}
		if err := sendBulk(ctx, es, op, ops[from:to], lines[from:to], results[from:to]); err != nil {
			return nil, err
		}
		from = to
	}
	return results, nil
}

// encodeOp returns the action and body lines of one op.
func encodeOp(o Op) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	meta := map[string]any{"_index": o.Index, "_id": o.ID}
	if o.If != nil {
		meta["if_seq_no"] = o.If.SeqNo
		meta["if_primary_term"] = o.If.PrimaryTerm
	}
	if err := enc.Encode(map[string]any{o.Action: meta}); err != nil {
		return nil, fmt.Errorf("encode action: %w", err)
	}
	if whole, ok := o.Body.(json.RawMessage); ok {
		// A whole document as read and patched (withFields): already JSON.
		buf.Write(whole)
		buf.WriteByte('\n')
		return buf.Bytes(), nil
	}
	if err := enc.Encode(o.Body); err != nil {
		return nil, fmt.Errorf("encode document %s: %w", o.ID, err)
	}
	return buf.Bytes(), nil
}

// tooLargeForIndexingPressure reports a request refused because it alone
// nearly fills the node's indexing-pressure budget (429 with
// coordinating_operation_bytes close to max_coordinating_bytes: a 50 MB
// half of a request refused as over 100 MB, on a node with a 512 MB heap).
// Halves of it fit; a busy node refusing small requests is not split.
func tooLargeForIndexingPressure(re *esclient.ResponseError) bool {
	if re.Status != http.StatusTooManyRequests || !strings.Contains(re.Body, "es_rejected_execution_exception") {
		return false
	}
	op, okOp := rejectedBytes(re.Body, "coordinating_operation_bytes=")
	limit, okMax := rejectedBytes(re.Body, "max_coordinating_bytes=")
	return okOp && okMax && limit > 0 && op*2 > limit
}

// rejectedBytes reads the number after key in an indexing-pressure refusal.
func rejectedBytes(body, key string) (int64, bool) {
	_, rest, found := strings.Cut(body, key)
	if !found {
		return 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.ParseInt(rest[:end], 10, 64)
	return n, err == nil
}

// sendBulk sends one request and fills out, one result per op. On 413, or
// a 429 because the request alone nearly fills the node's indexing-pressure
// budget, it splits the request in halves.
func sendBulk(ctx context.Context, es *esclient.Client, op string, ops []Op, lines [][]byte, out []Result) error {
	var body bytes.Buffer
	for _, l := range lines {
		body.Write(l)
	}
	res, err := es.Bulk(&body, es.Bulk.WithContext(ctx))
	if err := esclient.CheckResponse(op, res, err); err != nil {
		var re *esclient.ResponseError
		if errors.As(err, &re) && (re.Status == http.StatusRequestEntityTooLarge || (len(ops) > 1 && tooLargeForIndexingPressure(re))) {
			if len(ops) == 1 {
				out[0] = Result{ID: ops[0].ID, Status: re.Status, Err: fmt.Errorf("%s %s: document of %d bytes refused as too large: %w", op, ops[0].ID, len(lines[0]), err)}
				return nil
			}
			half := len(ops) / 2
			if err := sendBulk(ctx, es, op, ops[:half], lines[:half], out[:half]); err != nil {
				return err
			}
			return sendBulk(ctx, es, op, ops[half:], lines[half:], out[half:])
		}
		return err
	}
	defer res.Body.Close()
	var parsed bulkResponse
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return fmt.Errorf("%s: decode bulk response: %w", op, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	if len(parsed.Items) != len(ops) {
		return fmt.Errorf("%s: bulk answered %d items for %d actions", op, len(parsed.Items), len(ops))
	}
	for i, item := range parsed.Items {
		for _, r := range item { // one key: the action name
			out[i] = Result{ID: r.ID, Status: r.Status, SeqNo: r.SeqNo, PrimaryTerm: r.PrimaryTerm}
			if r.Status >= 300 {
				out[i].Err = &esclient.ResponseError{Op: op + " " + ops[i].ID, Status: r.Status, Body: string(r.Error)}
			}
		}
	}
	return nil
}
