package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
)

// OutboxWriter inserts classified documents into the publisher's
// classified_outbox. It connects as a role that may only INSERT there.
type OutboxWriter struct {
	db *sql.DB
}

// NewOutboxWriter returns a writer over the publisher's database.
func NewOutboxWriter(db *sql.DB) *OutboxWriter {
	return &OutboxWriter{db: db}
}

const outboxColumns = 12

// WriteBatch inserts one outbox row per document in a single statement.
// A content id already in the outbox is left as it is (ON CONFLICT DO
// NOTHING): a document classified again after a crash before its commit
// point is not published twice. (The INSERT-only role could not update the
// row anyway.)
func (w *OutboxWriter) WriteBatch(ctx context.Context, docs []*domain.ClassifiedContent) error {
	if len(docs) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO classified_outbox (
		content_id, source_name, index_name, content_type, topics,
		quality_score, is_crime_related, crime_subcategory,
		title, body, url, published_date) VALUES `)
	args := make([]any, 0, len(docs)*outboxColumns)
	for i, d := range docs {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString(placeholders(i*outboxColumns, outboxColumns))
		args = append(args, d.ID, d.SourceName, d.Index, d.ContentType, pq.Array(d.Topics),
			d.QualityScore, d.IsCrimeRelated, d.CrimeSubcategory,
			d.Title, d.RawText, d.URL, d.PublishedDate)
	}
	q.WriteString(` ON CONFLICT DO NOTHING`)
	if _, err := w.db.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("write outbox: %w", err)
	}
	return nil
}
