package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/fault"
)

// HistoryRepository records every classification in classification_history.
type HistoryRepository struct {
	db *sql.DB
}

// NewHistoryRepository returns a repository over the classifier's database.
func NewHistoryRepository(db *sql.DB) *HistoryRepository {
	return &HistoryRepository{db: db}
}

// Ping proves the classifier's database answers (a SELECT 1): the probe
// of an outage when a write's error does not tell (fault.Proved).
func (r *HistoryRepository) Ping(ctx context.Context) error { return fault.PingPostgres(r.db)(ctx) }

const historyColumns = 11

// InsertBatch writes one row per document in a single statement. A row is
// keyed by (index_name, content_id, claim_id): writing the same claim's result twice
// (a retried batch) is absorbed, while a new claim of the same document after
// a crash records a new attempt.
//
// A document a reprocess task set back to pending (ReprocessTask) is
// counted on that task in the same statement: reclassified, and
// topics_changed when its topic set differs from that of its previous
// history row (none counts as no topics). Only the rows actually inserted
// are counted, so a retried batch adds nothing.
func (r *HistoryRepository) InsertBatch(ctx context.Context, docs []*domain.ClassifiedContent) error {
	if len(docs) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO classification_history
		(content_id, claim_id, source_name, index_name, content_type, quality_score, topics,
		 is_crime_related, crime_subcategory, confidence, classifier_version) VALUES `)
	args := make([]any, 0, len(docs)*historyColumns+len(docs))
	var tasks, idx, ids, claims []string
	for i, d := range docs {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString(placeholders(i*historyColumns, historyColumns))
		args = append(args, d.ID, d.ClaimID, d.SourceName, d.Index, d.ContentType, d.QualityScore,
			pq.Array(d.Topics), d.IsCrimeRelated, d.CrimeSubcategory, d.Confidence, d.ClassifierVersion)
		if d.ReprocessTask != "" {
			tasks, idx = append(tasks, d.ReprocessTask), append(idx, d.Index)
			ids, claims = append(ids, d.ID), append(claims, d.ClaimID)
		}
	}
	q.WriteString(` ON CONFLICT (index_name, content_id, claim_id) DO NOTHING`)
	if len(tasks) > 0 {
		insert := q.String()
		q.Reset()
		q.WriteString(`WITH ins AS (` + insert + ` RETURNING index_name, content_id, claim_id, topics)`)
		// The previous row is read from the statement's snapshot, which
		// does not hold the rows it inserts.
		n := len(args)
		fmt.Fprintf(&q, `, requeued AS (
			SELECT t.task, ins.topics, (SELECT h.topics FROM classification_history h
				WHERE h.index_name = ins.index_name AND h.content_id = ins.content_id ORDER BY h.id DESC LIMIT 1) AS previous
			FROM unnest($%d::text[], $%d::text[], $%d::text[], $%d::text[]) AS t(task, index_name, content_id, claim_id)
			JOIN ins USING (index_name, content_id, claim_id)),
		counted AS (
			SELECT task, COUNT(*) AS reclassified, COUNT(*) FILTER (WHERE NOT (
				COALESCE(previous, '{}') @> topics AND topics @> COALESCE(previous, '{}'))) AS changed
			FROM requeued GROUP BY task)
		UPDATE reprocess_tasks r SET reclassified = r.reclassified + c.reclassified, topics_changed = r.topics_changed + c.changed
		FROM counted c WHERE r.id::text = c.task`, n+1, n+2, n+3, n+4)
		args = append(args, pq.Array(tasks), pq.Array(idx), pq.Array(ids), pq.Array(claims))
	}
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

// Bucket is the number of classifications in one interval.
type Bucket struct {
	Start time.Time `json:"bucket"`
	Count int64     `json:"count"`
}

// Stats is classification activity over a window.
type Stats struct {
	Total       int64            `json:"total"`
	PerInterval []Bucket         `json:"per_interval"`
	ByTopic     map[string]int64 `json:"by_topic"`
	BySource    map[string]int64 `json:"by_source"`
}

// StatsQuery is what Stats counts: the classifications of the last Window
// in buckets of Interval, of one source when Source is set.
type StatsQuery struct {
	Window, Interval time.Duration
	// Source, when set, narrows the total, the buckets and the topics to
	// one source; BySource still counts every source of the window (the
	// sources there are to pick from).
	Source string
}

// Stats counts classifications of the last window: in total, per interval
// (oldest first), by topic and by source.
func (r *HistoryRepository) Stats(ctx context.Context, q StatsQuery) (*Stats, error) {
	s := &Stats{PerInterval: []Bucket{}, ByTopic: map[string]int64{}, BySource: map[string]int64{}}
	rows, err := r.db.QueryContext(ctx, `
		SELECT date_bin(make_interval(secs => $2), classified_at, TIMESTAMPTZ '2000-01-01'), COUNT(*)
		FROM classification_history
		WHERE classified_at > NOW() - make_interval(secs => $1) AND ($3 = '' OR source_name = $3)
		GROUP BY 1 ORDER BY 1`, q.Window.Seconds(), q.Interval.Seconds(), q.Source)
	if err != nil {
		return nil, fmt.Errorf("classification stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var b Bucket
		if err := rows.Scan(&b.Start, &b.Count); err != nil {
			return nil, fmt.Errorf("classification stats: %w", err)
		}
		s.Total += b.Count
		s.PerInterval = append(s.PerInterval, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("classification stats: %w", err)
	}
	for _, g := range []struct {
		expr, source string
		out          map[string]int64
	}{{"unnest(topics)", q.Source, s.ByTopic}, {"source_name", "", s.BySource}} {
		if err := r.countBy(ctx, g.expr, q.Window, g.source, g.out); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// countBy counts the window's classifications by expr, of source when set.
func (r *HistoryRepository) countBy(ctx context.Context, expr string, window time.Duration, source string, out map[string]int64) error {
	rows, err := r.db.QueryContext(ctx, `SELECT `+expr+` AS k, COUNT(*) FROM classification_history
		WHERE classified_at > NOW() - make_interval(secs => $1) AND ($2 = '' OR source_name = $2) GROUP BY 1`, window.Seconds(), source)
	if err != nil {
		return fmt.Errorf("classification stats by %s: %w", expr, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return fmt.Errorf("classification stats by %s: %w", expr, err)
		}
		out[k] = n
	}
	return rows.Err()
}
