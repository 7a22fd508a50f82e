package processor

import (
	"context"
	"log/slog"

	"github.com/north-cloud/classifier/internal/domain"
)

// HistoryWriter is classification_history (storage.HistoryRepository in
// the service), as the committer uses it. Its Ping is the probe of the
// classifier's database for every write the committer makes there.
type HistoryWriter interface {
	InsertBatch(ctx context.Context, docs []*domain.ClassifiedContent) error
	Ping(ctx context.Context) error
}

// history records each classification in the classifier's database.
type history struct {
	store  HistoryWriter
	db     database
	logger *slog.Logger
}

// write inserts the history rows of rs (isolate): it returns those
// recorded and those refused alone; held when the database is out.
func (h *history) write(ctx context.Context, rs []Result) (stored, failed []Result, held bool) {
	return isolate(ctx, h.logger, rs, statement{name: "history", db: h.db, run: rowsOf(h.store.InsertBatch)})
}
