// Package labels is the labelling loop: the classified documents worth an
// operator's label (no topic, a low confidence, or rules that disagree with
// the model), the labels operators give them (table topic_labels), their
// export in the format classifier train reads, and how the classifier's
// decisions measure against them (precision and recall per topic, the
// confusion matrix, accuracy per week).
package labels

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/topicmodel"
)

// Errors of the package, mapped to HTTP statuses by the API.
var (
	ErrInvalid     = errors.New("invalid label")
	ErrNotFound    = errors.New("not found")
	ErrUnavailable = errors.New("label store unavailable")
)

// MaxBodyBytes bounds the text kept with a label (the pipeline analyses no
// more of a body either).
const MaxBodyBytes = 64 << 10

var labelPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ValidLabel reports whether s can be a label: a topic name, lower case
// letters, digits and underscores, starting with a letter, at most 64.
func ValidLabel(s string) bool { return labelPattern.MatchString(s) }

// Label is one operator's label of one document.
type Label struct {
	ID                  int64     `json:"id"`
	Index               string    `json:"index"`
	ContentID           string    `json:"content_id"`
	Label               string    `json:"label"`
	Title               string    `json:"title"`
	Body                string    `json:"-"`
	PredictedTopic      string    `json:"predicted_topic"`
	PredictedConfidence float64   `json:"predicted_confidence"`
	LabelledBy          string    `json:"labelled_by"`
	LabelledAt          time.Time `json:"labelled_at"`
}

// Store keeps labels in the classifier's database.
type Store struct {
	db *sql.DB
}

// NewStore returns a Store over the classifier's database.
func NewStore(db *sql.DB) *Store { return &Store{db: db} }

const labelColumns = `id, raw_index, content_id, label, title, predicted_topic, predicted_confidence, labelled_by, labelled_at`

func scanLabel(s interface{ Scan(...any) error }) (Label, error) {
	var l Label
	err := s.Scan(&l.ID, &l.Index, &l.ContentID, &l.Label, &l.Title, &l.PredictedTopic, &l.PredictedConfidence, &l.LabelledBy, &l.LabelledAt)
	l.LabelledAt = l.LabelledAt.UTC()
	return l, err
}

// Put stores l, replacing the label of the same document (a relabel keeps
// the prediction recorded the first time). created reports a new row.
func (s *Store) Put(ctx context.Context, l Label) (out Label, created bool, err error) {
	if !ValidLabel(l.Label) {
		return Label{}, false, fmt.Errorf("put label: %q is not a topic name (lower case letters, digits, _): %w", l.Label, ErrInvalid)
	}
	if l.Index == "" || l.ContentID == "" {
		return Label{}, false, fmt.Errorf("put label: index and id are required: %w", ErrInvalid)
	}
	if len(l.Body) > MaxBodyBytes {
		l.Body = l.Body[:MaxBodyBytes]
	}
	row := s.db.QueryRowContext(ctx, `INSERT INTO topic_labels
		(raw_index, content_id, label, title, body, predicted_topic, predicted_confidence, labelled_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (raw_index, content_id) DO UPDATE SET label = EXCLUDED.label,
			labelled_by = EXCLUDED.labelled_by, labelled_at = NOW()
		RETURNING `+labelColumns+`, (xmax = 0)`,
		l.Index, l.ContentID, l.Label, l.Title, l.Body, l.PredictedTopic, l.PredictedConfidence, l.LabelledBy)
	out, err = scanLabel(scanTail{row, &created})
	if err != nil {
		return Label{}, false, dbError("put label", err)
	}
	return out, created, nil
}

// scanTail scans a row whose last column goes to tail.
type scanTail struct {
	row  *sql.Row
	tail *bool
}

func (s scanTail) Scan(dest ...any) error { return s.row.Scan(append(dest, s.tail)...) }

// Delete removes one label.
func (s *Store) Delete(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM topic_labels WHERE id = $1`, id)
	if err != nil {
		return dbError("delete label", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete label %d: %w", id, ErrNotFound)
	}
	return nil
}

// Listing is a page of labels and the counts of all of them.
type Listing struct {
	Labels   []Label        `json:"labels"`
	Total    int            `json:"total"`
	PerLabel map[string]int `json:"per_label"`
}

// List returns the newest limit labels and the counts per label.
func (s *Store) List(ctx context.Context, limit int) (Listing, error) {
	out := Listing{Labels: []Label{}, PerLabel: map[string]int{}}
	rows, err := s.db.QueryContext(ctx, `SELECT `+labelColumns+` FROM topic_labels ORDER BY labelled_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return out, dbError("list labels", err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLabel(rows)
		if err != nil {
			return out, dbError("list labels", err)
		}
		out.Labels = append(out.Labels, l)
	}
	if err := rows.Err(); err != nil {
		return out, dbError("list labels", err)
	}
	counts, err := s.db.QueryContext(ctx, `SELECT label, count(*) FROM topic_labels GROUP BY label`)
	if err != nil {
		return out, dbError("count labels", err)
	}
	defer counts.Close()
	for counts.Next() {
		var label string
		var n int
		if err := counts.Scan(&label, &n); err != nil {
			return out, dbError("count labels", err)
		}
		out.PerLabel[label] = n
		out.Total += n
	}
	return out, dbError("count labels", counts.Err())
}

// Labelled returns which of keys (raw index, id) are labelled.
func (s *Store) Labelled(ctx context.Context, indices, ids []string) (map[[2]string]bool, error) {
	out := map[[2]string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT raw_index, content_id FROM topic_labels
		WHERE (raw_index, content_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, pq.StringArray(indices), pq.StringArray(ids))
	if err != nil {
		return nil, dbError("labelled documents", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return nil, dbError("labelled documents", err)
		}
		out[k] = true
	}
	return out, dbError("labelled documents", rows.Err())
}

// exportLine is one line of Export: what classifier train reads.
type exportLine struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Export writes every label as labelled NDJSON ({"id", "label", "title",
// "text"}, the format classifier train and POST /models/train read), oldest
// first, streaming.
func (s *Store) Export(ctx context.Context, w io.Writer) (int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT raw_index, content_id, label, title, body FROM topic_labels ORDER BY id`)
	if err != nil {
		return 0, dbError("export labels", err)
	}
	defer rows.Close()
	enc := json.NewEncoder(w)
	n := 0
	for rows.Next() {
		var index, id string
		var l exportLine
		if err := rows.Scan(&index, &id, &l.Label, &l.Title, &l.Text); err != nil {
			return n, dbError("export labels", err)
		}
		l.ID = index + "/" + id
		if err := enc.Encode(l); err != nil {
			return n, fmt.Errorf("export labels: %w", err)
		}
		n++
	}
	return n, dbError("export labels", rows.Err())
}

// Examples are the labels as training examples.
func (s *Store) Examples(ctx context.Context) ([]topicmodel.Example, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT label, title, body FROM topic_labels ORDER BY id`)
	if err != nil {
		return nil, dbError("label examples", err)
	}
	defer rows.Close()
	var out []topicmodel.Example
	for rows.Next() {
		var e topicmodel.Example
		if err := rows.Scan(&e.Label, &e.Title, &e.Body); err != nil {
			return nil, dbError("label examples", err)
		}
		out = append(out, e)
	}
	return out, dbError("label examples", rows.Err())
}

func dbError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	case rulestore.IsUnavailable(err):
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	if pqErr := pq.As(err); pqErr != nil && pqErr.Code == "23514" {
		return fmt.Errorf("%s: %w: %s", op, ErrInvalid, pqErr.Message)
	}
	return fmt.Errorf("%s: %w", op, err)
}
