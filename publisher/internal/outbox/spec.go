package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/north-cloud/infrastructure/outbox"
	"github.com/north-cloud/publisher/internal/domain"
)

// ErrNotClaimed is returned by OutboxRepository's MarkPublished and
// MarkFailed for a row that is not publishing under a claim this
// repository made: never fetched through it, already marked, or rescued
// (ResetToPending) and perhaps claimed by another worker since.
var ErrNotClaimed = errors.New("outbox entry is not claimed by this repository")

// The design's retry schedule of a failed publish (one minute, doubling)
// with the worker's cap, and the cleaner's chunk.
const (
	specRetryInitial = time.Minute
	specRetryMax     = time.Hour
	specCleanupChunk = 5000
)

// OutboxRepository is the original design's outbox repository
// (architecture.md 4.3, package database there): Repository under the
// design's signatures. ResetToPending is Repository's own; the others keep
// the design's arguments and delegate:
//
//   - Insert writes the row through infrastructure/outbox, the classifier's
//     insert (the design's ON CONFLICT ... CASE was a no-op: a row already
//     there with the same index, id and version is left as it is).
//   - FetchPending and FetchRetryable return the entries of a claim, and
//     the repository remembers each entry's claim token, so MarkPublished
//     and MarkFailed, which take an id alone, still change a row only while
//     this claim holds it (ErrNotClaimed otherwise). An entry fetched and
//     never marked is remembered until the repository is dropped.
//   - CleanupPublished deletes in chunks; GetStats returns the design's
//     OutboxStats.
type OutboxRepository struct {
	*Repository

	mu     sync.Mutex
	claims map[string]specClaim // by outbox id
}

// specClaim is what MarkPublished and MarkFailed need of a fetched entry.
type specClaim struct {
	token      string
	retryCount int
}

// NewOutboxRepository returns the repository over the publisher's database.
func NewOutboxRepository(db *sql.DB) *OutboxRepository {
	return &OutboxRepository{Repository: NewRepository(db), claims: map[string]specClaim{}}
}

// Insert adds req to the outbox, pending. It is idempotent: the same
// document and version again is left as it is.
func (r *OutboxRepository) Insert(ctx context.Context, req *domain.OutboxCreateRequest) error {
	return outbox.InsertBatch(ctx, r.db, []outbox.Message{*req})
}

// FetchPending claims up to limit pending entries, crime content first,
// then oldest first (Repository.FetchPending).
func (r *OutboxRepository) FetchPending(ctx context.Context, limit int) ([]domain.OutboxEntry, error) {
	batch, err := r.Repository.FetchPending(ctx, limit)
	return r.remember(batch, err)
}

// FetchRetryable claims up to limit failed entries with retries left whose
// retry is due (Repository.FetchRetryable).
func (r *OutboxRepository) FetchRetryable(ctx context.Context, limit int) ([]domain.OutboxEntry, error) {
	batch, err := r.Repository.FetchRetryable(ctx, limit)
	return r.remember(batch, err)
}

func (r *OutboxRepository) remember(batch Batch, err error) ([]domain.OutboxEntry, error) {
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range batch.Entries {
		r.claims[e.ID] = specClaim{token: batch.Token, retryCount: e.RetryCount}
	}
	return batch.Entries, nil
}

// claim returns the claim of id fetched through r.
func (r *OutboxRepository) claim(id string) (specClaim, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.claims[id]
	if !ok {
		return c, fmt.Errorf("outbox entry %s: %w", id, ErrNotClaimed)
	}
	return c, nil
}

// settle forgets id's claim once its outcome is recorded or the row is no
// longer the claim's (n == 0); after an error the caller may try again.
func (r *OutboxRepository) settle(id string, n int64) error {
	r.mu.Lock()
	delete(r.claims, id)
	r.mu.Unlock()
	if n == 0 {
		return fmt.Errorf("outbox entry %s: %w", id, ErrNotClaimed)
	}
	return nil
}

// MarkPublished marks the entry id published (Repository.MarkPublished
// with the token of the claim that fetched it).
func (r *OutboxRepository) MarkPublished(ctx context.Context, id string) error {
	c, err := r.claim(id)
	if err != nil {
		return err
	}
	n, err := r.Repository.MarkPublished(ctx, c.token, []string{id})
	if err != nil {
		return err
	}
	return r.settle(id, n)
}

// MarkFailed records a failed publish of the entry id: one more retry used,
// errorMsg, and the next retry due after the design's schedule (one minute,
// doubling with each retry used, at most an hour).
func (r *OutboxRepository) MarkFailed(ctx context.Context, id string, errorMsg string) error {
	c, err := r.claim(id)
	if err != nil {
		return err
	}
	retryIn := min(specRetryInitial<<min(c.retryCount, 10), specRetryMax)
	marked, err := r.Repository.MarkFailed(ctx, c.token, []Failure{{ID: id, Error: errorMsg, RetryIn: retryIn}})
	if err != nil {
		return err
	}
	return r.settle(id, int64(len(marked.Recorded)))
}

// CleanupPublished deletes entries published more than olderThan ago, in
// chunks (Repository.CleanupPublished), and returns how many.
func (r *OutboxRepository) CleanupPublished(ctx context.Context, olderThan time.Duration) (int64, error) {
	return r.Repository.CleanupPublished(ctx, olderThan, specCleanupChunk)
}

// OutboxStats is the original design's outbox statistics, read from
// domain.OutboxStats (Repository.GetStats), which also has the 95th
// percentile lag and the oldest pending row's age.
type OutboxStats struct {
	Pending              int64
	Publishing           int64
	Published            int64
	FailedRetryable      int64
	FailedExhausted      int64
	AvgPublishLagSeconds float64
}

// GetStats returns the outbox's counts by status and the average publish
// lag of the last hour.
func (r *OutboxRepository) GetStats(ctx context.Context) (*OutboxStats, error) {
	s, err := r.Repository.GetStats(ctx)
	if err != nil {
		return nil, err
	}
	return &OutboxStats{
		Pending:              s.Counts[domain.OutboxStatusPending],
		Publishing:           s.Counts[domain.OutboxStatusPublishing],
		Published:            s.Counts[domain.OutboxStatusPublished],
		FailedRetryable:      s.FailedRetryable,
		FailedExhausted:      s.FailedExhausted,
		AvgPublishLagSeconds: s.AvgPublishLagSeconds,
	}, nil
}
