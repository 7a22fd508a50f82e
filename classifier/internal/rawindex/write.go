package rawindex

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/esbulk"
	"github.com/north-cloud/infrastructure/contentindex"
)

// ErrChanged is the outcome of a write refused because the document is no
// longer at the version it was read at (409): a crawler rewrote it, another
// replica flipped it, or a stale copy was sent twice. It is the document's
// news, not a fault of Elasticsearch: nothing was written, and the caller
// leaves the document to whoever changed it.
var ErrChanged = errors.New("the raw document changed since it was read")

// Changed reports a write refused with ErrChanged.
func Changed(err error) bool { return errors.Is(err, ErrChanged) }

// Change is a conditional status change of one raw document, at the version
// it was read at.
type Change struct {
	Raw    *domain.RawContent
	Status string
	// Reason is recorded in classification_error when the status is failed.
	Reason string
	// Doc is the classification, when the status is classified. It is not
	// written to the raw document; it travels with the change for the
	// caller's accounting.
	Doc *domain.ClassifiedContent
}

// Flip sets the status of raw documents, each only if it is still at the
// version it was read at: a document changed since is refused with
// ErrChanged and left to whoever changed it. Moving a claimed document to
// classified is the commit point of the pipeline. The result for
// changes[i] is results[i]; an error is that of a whole request.
func (s *Store) Flip(ctx context.Context, changes []Change) ([]esbulk.Result, error) {
	ops := make([]esbulk.Op, len(changes))
	for i, c := range changes {
		fields := map[string]any{"classification_status": c.Status}
		if c.Status == contentindex.StatusFailed {
			fields["classification_error"] = c.Reason
		}
		ops[i] = conditional(c.Raw, fields)
	}
	return s.write(ctx, "flip raw status", ops)
}

// Requeue sets raw documents back to pending at priority low, without a
// claim or an error, each only if it is still at the version it was read
// at (a reprocess: the documents are classified again after the fresh
// ones). Each is stamped pending_since now: its wait is counted from the
// requeue, not from its crawl, and stamped reprocess_task with task, the
// id of the reprocess task that set it back (its topics changed or not are
// counted on that task when it is committed again). The result for docs[i]
// is results[i].
func (s *Store) Requeue(ctx context.Context, docs []*domain.RawContent, task string) ([]esbulk.Result, error) {
	ops := make([]esbulk.Op, len(docs))
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for i, d := range docs {
		ops[i] = conditional(d, map[string]any{
			"classification_status": contentindex.StatusPending,
			"priority":              contentindex.PriorityLow,
			"pending_since":         now,
			"reprocess_task":        task,
			"claimed_by":            nil,
			"claimed_at":            nil,
			"classification_error":  nil,
		})
	}
	return s.write(ctx, "requeue raw documents", ops)
}

// write sends ops through the bulk writer and marks a refusal on the
// version as ErrChanged.
func (s *Store) write(ctx context.Context, op string, ops []esbulk.Op) ([]esbulk.Result, error) {
	results, err := s.bulk.Run(ctx, op, ops)
	if err != nil {
		return nil, err
	}
	for i, r := range results {
		if r.Status == http.StatusConflict && r.Err != nil {
			results[i].Err = fmt.Errorf("%w: %w", ErrChanged, r.Err)
		}
	}
	return results, nil
}
