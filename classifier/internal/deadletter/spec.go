package deadletter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/north-cloud/classifier/internal/domain"
)

// DLQStats is the original design's name for Stats (architecture.md 3.2):
// its Pending, Exhausted, Ready, AvgRetries and OldestEntry under the same
// names and types (OldestEntry is the oldest, MIN(created_at); the design
// reported the newest), with Permanent, BySource and ByErrorCode beside them.
type DLQStats = Stats

// ErrAmbiguousContentID is returned by DeadLetterRepository's Remove and
// MarkExhausted for a content id that has entries in more than one raw
// index: ids are unique only inside one index, so the id alone does not say
// which document is meant. Repository's methods take the index too.
var ErrAmbiguousContentID = errors.New("content id has dead-letter entries in several indices")

// DeadLetterRepository is the original design's dead-letter repository
// (architecture.md 3.2, package database there): Repository under the
// design's signatures. Enqueue, GetStats and CountBySource are Repository's
// own; FetchRetryable, Remove and MarkExhausted keep the design's arguments
// and delegate, since Repository's take more: a claim's lease and budgets,
// and a document's index beside its id.
type DeadLetterRepository struct {
	*Repository
}

// NewDeadLetterRepository returns the repository over the classifier's
// database with the default configuration (NewRepository).
func NewDeadLetterRepository(db *sql.DB) *DeadLetterRepository {
	return &DeadLetterRepository{Repository: NewRepository(db)}
}

// FetchRetryable claims up to limit entries whose retry is due, as
// Repository.FetchRetryable does with a RetryLeaseDefault lease and the
// default per-source budget: the entries are moved out of other workers'
// reach in the same transaction (the design's FOR UPDATE SKIP LOCKED
// outside a transaction held nothing) until the lease passes.
func (r *DeadLetterRepository) FetchRetryable(ctx context.Context, limit int) ([]domain.DeadLetterEntry, error) {
	claim, err := r.Repository.FetchRetryable(ctx, ClaimRequest{Limit: limit, Lease: RetryLeaseDefault})
	if err != nil {
		return nil, err
	}
	return claim.Entries, nil
}

// Remove deletes the entry of contentID, a document since classified; an
// id with no entry is no error. An id with entries in several indices is
// ErrAmbiguousContentID: Repository.Remove takes the index.
func (r *DeadLetterRepository) Remove(ctx context.Context, contentID string) error {
	doc, found, err := r.entryOf(ctx, contentID)
	if err != nil || !found {
		return err
	}
	_, err = r.Repository.Remove(ctx, doc)
	return err
}

// MarkExhausted spends the remaining retries of contentID's entry, as
// Repository.MarkExhausted does: ErrNotFound when it has none (the design
// reported nothing), ErrAmbiguousContentID when it has entries in several
// indices.
func (r *DeadLetterRepository) MarkExhausted(ctx context.Context, contentID string) error {
	doc, found, err := r.entryOf(ctx, contentID)
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	return r.Repository.MarkExhausted(ctx, doc)
}

// entryOf returns the document of contentID's one entry. The table has no
// index on the id alone (its key leads with the index), so this reads the
// table; the design's callers are not on a hot path.
func (r *DeadLetterRepository) entryOf(ctx context.Context, contentID string) (domain.DocKey, bool, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT index_name FROM dead_letter_queue WHERE content_id = $1 LIMIT 2`, contentID)
	if err != nil {
		return domain.DocKey{}, false, fmt.Errorf("find dead letter %s: %w", contentID, err)
	}
	defer rows.Close()
	var indices []string
	for rows.Next() {
		var index string
		if err := rows.Scan(&index); err != nil {
			return domain.DocKey{}, false, fmt.Errorf("find dead letter %s: %w", contentID, err)
		}
		indices = append(indices, index)
	}
	if err := rows.Err(); err != nil {
		return domain.DocKey{}, false, fmt.Errorf("find dead letter %s: %w", contentID, err)
	}
	switch len(indices) {
	case 0:
		return domain.DocKey{}, false, nil
	case 1:
		return domain.DocKey{Index: indices[0], ID: contentID}, true, nil
	}
	return domain.DocKey{}, false, fmt.Errorf("%w: %q", ErrAmbiguousContentID, contentID)
}
