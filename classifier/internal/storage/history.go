package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
)

// HistoryRepository records every classification in classification_history.
type HistoryRepository struct {
	db *sql.DB
}

// NewHistoryRepository returns a repository over the classifier's database.
func NewHistoryRepository(db *sql.DB) *HistoryRepository {
	return &HistoryRepository{db: db}
}

const historyColumns = 11

// InsertBatch writes one row per document in a single statement. A row is
// keyed by (content_id, claim_id): writing the same claim's result twice
// (a retried batch) is absorbed, while a new claim of the same document after
// a crash records a new attempt.
func (r *HistoryRepository) InsertBatch(ctx context.Context, docs []*domain.ClassifiedContent) error {
	if len(docs) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO classification_history
		(content_id, claim_id, source_name, index_name, content_type, quality_score, topics,
		 is_crime_related, crime_subcategory, confidence, classifier_version) VALUES `)
	args := make([]any, 0, len(docs)*historyColumns)
	for i, d := range docs {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString(placeholders(i*historyColumns, historyColumns))
		args = append(args, d.ID, d.ClaimID, d.SourceName, d.Index, d.ContentType, d.QualityScore,
			pq.Array(d.Topics), d.IsCrimeRelated, d.CrimeSubcategory, d.Confidence, d.ClassifierVersion)
	}
	q.WriteString(` ON CONFLICT (content_id, claim_id) DO NOTHING`)
	if _, err := r.db.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("insert classification history: %w", err)
	}
	return nil
}

// placeholders returns "($from+1,...,$from+n)".
func placeholders(from, n int) string {
	var b strings.Builder
	b.WriteByte('(')
	for j := 1; j <= n; j++ {
		if j > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "$%d", from+j)
	}
	b.WriteByte(')')
	return b.String()
}
