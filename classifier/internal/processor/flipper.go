package processor

import (
	"context"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/esbulk"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/classifier/internal/telemetry"
	"github.com/north-cloud/infrastructure/breaker"
	"github.com/north-cloud/infrastructure/fault"
)

// RawFlipper is the raw indices (rawindex.Store in the service), as the
// committer uses them: the status flip that is the commit point, whether
// an index still exists, and the cluster's probe.
type RawFlipper interface {
	Flip(ctx context.Context, changes []rawindex.Change) ([]esbulk.Result, error)
	Exists(ctx context.Context, index string) (bool, error)
	Ping(ctx context.Context) error
}

// requeueWriteBlocked is the reason of requeueBlocked in logs and metrics.
const requeueWriteBlocked = "write_blocked"

// requeueIndexDeleted is the reason of dropDeletedIndices in logs and
// metrics: the claim is released, and nothing is left to take again.
const requeueIndexDeleted = "index_deleted"

// errorCodeStatusFlip labels classifier_documents_failed_total for a
// status flip that failed otherwise; the document returns after the lease.
const errorCodeStatusFlip = "STATUS_FLIP"

// flipper writes the raw documents' status: the commit point, done only
// after everything else of the batch is written.
type flipper struct {
	raw     RawFlipper
	es      *breaker.Breaker
	claims  claims
	metrics *telemetry.Metrics
	logger  *slog.Logger
}

// blockedChange is a status change a write block refused, with the
// refusal.
type blockedChange struct {
	rawindex.Change
	err error
}

// flip performs the status changes and returns those that took effect, and
// those to try again once Elasticsearch answers. A change refused as a
// conflict means the document changed since the search that found it (a
// crawler rewrote it, or another replica flipped it): its claim is
// finished at the version it was made at, so the document is claimed again
// as soon as a search returns it as it is now, never at the version this
// attempt saw; nothing more of this attempt is written. A change refused
// by a write block on its index (set after the document was claimed) has
// its claim released: the document is no fault of its own and counts no
// stall, and the poller takes it again once the block is lifted.
func (f *flipper) flip(ctx context.Context, changes []rawindex.Change) (flipped, retry []rawindex.Change) {
	flipped, retry, conflicts, blocked := f.flipOnce(ctx, f.dropDeletedIndices(ctx, changes))
	if len(conflicts) > 0 {
		for _, ch := range conflicts {
			f.logger.WarnContext(ctx, "status flip refused: the document changed since it was found; it is claimed again at its new version",
				"content_id", ch.Raw.ID, "source", ch.Raw.SourceName, "index", ch.Raw.Index)
		}
		f.claims.finish(ctx, conflicts)
	}
	f.requeueBlocked(ctx, blocked)
	return flipped, retry
}

// dropDeletedIndices takes out the changes whose raw index no longer
// exists (an operator deleted it after its documents were claimed) and
// releases their claims. Elasticsearch creates a missing index on an
// update, so their flips would bring the deleted index back, empty. Their
// classified documents and outbox rows are written already: nothing is
// lost with a status that has no document left to hold it. An index
// deleted between this check and the flip is still created again; the
// check makes that window the time of one request, from the time it took
// to classify the batch. An index whose existence cannot be told is
// flipped as before: the flip's own answer says what happened.
func (f *flipper) dropDeletedIndices(ctx context.Context, changes []rawindex.Change) []rawindex.Change {
	exists := map[string]bool{}
	for _, ch := range changes {
		if _, asked := exists[ch.Raw.Index]; !asked {
			ok, err := f.raw.Exists(ctx, ch.Raw.Index)
			exists[ch.Raw.Index] = ok || err != nil
		}
	}
	kept := make([]rawindex.Change, 0, len(changes))
	var released []*domain.RawContent
	gone := map[string]int{} // documents per deleted index
	for _, ch := range changes {
		if !exists[ch.Raw.Index] {
			gone[ch.Raw.Index]++
			released = append(released, ch.Raw)
			f.metrics.DocumentsRequeued.Add(ctx, 1, metric.WithAttributes(
				attribute.String("source", ch.Raw.SourceName), attribute.String("reason", requeueIndexDeleted)))
			continue
		}
		kept = append(kept, ch)
	}
	for index, n := range gone {
		f.logger.WarnContext(ctx, "raw index deleted since its documents were claimed; their status is not written, so the index is not created again",
			"index", index, "documents", n, "reason", requeueIndexDeleted)
	}
	f.claims.release(ctx, released, "index-deleted")
	return kept
}

// requeueBlocked counts and logs the changes a write block refused and
// releases their claims, so that they count no stall.
func (f *flipper) requeueBlocked(ctx context.Context, blocked []blockedChange) {
	if len(blocked) == 0 {
		return
	}
	raws := make([]*domain.RawContent, len(blocked))
	for i, b := range blocked {
		raws[i] = b.Raw
		f.metrics.DocumentsRequeued.Add(ctx, 1, metric.WithAttributes(
			attribute.String("source", b.Raw.SourceName), attribute.String("reason", requeueWriteBlocked)))
		f.logger.WarnContext(ctx, "status flip refused by a write block on the raw index; claim released, the document is taken again once the block is lifted",
			"content_id", b.Raw.ID, "source", b.Raw.SourceName, "index", b.Raw.Index, "reason", requeueWriteBlocked, "error", b.err)
	}
	f.claims.release(ctx, raws, "write-blocked")
}

// flipOnce sends the status changes once. It returns those that took
// effect, those to try again once Elasticsearch answers, those refused
// because the document changed (rawindex.ErrChanged), which is no fault of
// Elasticsearch, and those refused by a write block on their index.
func (f *flipper) flipOnce(ctx context.Context, changes []rawindex.Change) (flipped, retry, conflicts []rawindex.Change, blocked []blockedChange) {
	es := f.es
	items, err := f.raw.Flip(ctx, changes)
	if err != nil {
		if fault.ElasticsearchProved(ctx, err, f.raw.Ping) == fault.Dependency {
			es.Failure(err)
			return nil, changes, nil, nil
		}
		f.logger.ErrorContext(ctx, "status flip failed; documents stay claimed and return after the lease",
			"documents", len(changes), "error", err)
		f.metrics.DocumentsFailed.Add(ctx, int64(len(changes)), metric.WithAttributes(attribute.String("error_code", errorCodeStatusFlip)))
		return nil, nil, nil, nil
	}
	es.Success()
	// A 429 or 5xx of some items holds them for the breaker only if the
	// cluster fails its ping; else their index is at fault, and they return
	// after the lease like any refused flip, without pausing other indices.
	prover := fault.ItemProver{Probe: f.raw.Ping}
	for i, item := range items {
		switch {
		case item.Err == nil:
			flipped = append(flipped, changes[i])
		case rawindex.Changed(item.Err):
			conflicts = append(conflicts, changes[i])
		case prover.Kind(ctx, item.Status, item.Err.Error()) == fault.Dependency:
			es.Failure(item.Err)
			retry = append(retry, changes[i])
		case item.Status == http.StatusForbidden && fault.IsBlock(item.Err.Error()):
			blocked = append(blocked, blockedChange{changes[i], item.Err})
		default:
			// The document returns after the lease.
			f.metrics.DocumentsFailed.Add(ctx, 1, metric.WithAttributes(attribute.String("source", changes[i].Raw.SourceName),
				attribute.String("error_code", errorCodeStatusFlip)))
			f.logger.WarnContext(ctx, "status flip rejected; the document returns after the lease", "content_id", changes[i].Raw.ID,
				"source", changes[i].Raw.SourceName, "index", changes[i].Raw.Index, "error_code", errorCodeStatusFlip, "error", item.Err)
		}
	}
	return flipped, retry, conflicts, blocked
}
