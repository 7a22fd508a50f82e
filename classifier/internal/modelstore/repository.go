// Package modelstore keeps trained topic models in the classifier's
// Postgres (table topic_models, migration 019) and serves the ones in use to
// the pipeline: the active model, and a candidate scored in shadow beside it
// that decides the documents of its rollout share.
package modelstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/topicmodel"
)

// A model's statuses.
const (
	StatusInactive  = "inactive"
	StatusCandidate = "candidate"
	StatusActive    = "active"
	StatusRetired   = "retired"
)

// Errors of the repository, mapped to HTTP statuses by the API (404, 409,
// 400, 503).
var (
	ErrNotFound    = errors.New("topic model not found")
	ErrConflict    = errors.New("topic model status conflict")
	ErrInvalid     = errors.New("invalid topic model")
	ErrUnavailable = errors.New("model database unavailable")
)

// MaxModelBytes bounds a stored model (compressed), so a runaway training
// cannot fill the database or a replica's memory.
const MaxModelBytes = 64 << 20

// Summary is a stored model without its weights.
type Summary struct {
	ID             int64           `json:"id"`
	Name           string          `json:"name"`
	Status         string          `json:"status"`
	RolloutPercent int             `json:"rollout_percent"`
	Topics         []string        `json:"topics"`
	Terms          int             `json:"terms"`
	TrainedOn      json.RawMessage `json:"trained_on"`
	Scores         json.RawMessage `json:"scores"`
	CreatedBy      string          `json:"created_by"`
	CreatedAt      time.Time       `json:"created_at"`
	StatusAt       time.Time       `json:"status_at"`
}

// Repository reads and writes topic_models. Every write bumps the rule-set
// version (a trigger), so every replica's rule watcher reloads the models.
type Repository struct {
	db *sql.DB
}

// NewRepository returns a Repository over the classifier's database.
func NewRepository(db *sql.DB) *Repository { return &Repository{db: db} }

const summaryColumns = `id, name, status, rollout_percent, topics, terms, trained_on, scores, created_by, created_at, status_at`

func scanSummary(s interface{ Scan(...any) error }) (Summary, error) {
	var m Summary
	var topics pq.StringArray
	var trained, scores []byte
	err := s.Scan(&m.ID, &m.Name, &m.Status, &m.RolloutPercent, &topics, &m.Terms, &trained, &scores, &m.CreatedBy, &m.CreatedAt, &m.StatusAt)
	m.Topics, m.TrainedOn, m.Scores = topics, trained, scores
	m.CreatedAt, m.StatusAt = m.CreatedAt.UTC(), m.StatusAt.UTC()
	return m, err
}

// Encode is a model as stored: JSON, gzip-compressed.
func Encode(m *topicmodel.Model) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(m); err != nil {
		return nil, fmt.Errorf("encode model: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode model: %w", err)
	}
	if buf.Len() > MaxModelBytes {
		return nil, fmt.Errorf("encode model: %d bytes compressed, over %d: %w", buf.Len(), MaxModelBytes, ErrInvalid)
	}
	return buf.Bytes(), nil
}

// Decode reads a stored model and validates it.
func Decode(data []byte) (*topicmodel.Model, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode model: %w", err)
	}
	var m topicmodel.Model
	if err := json.NewDecoder(io.LimitReader(zr, 8*MaxModelBytes)).Decode(&m); err != nil {
		return nil, fmt.Errorf("decode model: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("decode model: %w", err)
	}
	return &m, nil
}

// NewModel is what Create stores.
type NewModel struct {
	Name      string
	Model     *topicmodel.Model
	TrainedOn any // JSON: documents per topic, files, settings
	Scores    any // JSON: figures on documents the model did not learn from
	CreatedBy string
}

// Create stores a model, inactive.
func (r *Repository) Create(ctx context.Context, in NewModel) (Summary, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 100 {
		return Summary{}, fmt.Errorf("create model: name must be 1..100 characters: %w", ErrInvalid)
	}
	if in.Model == nil {
		return Summary{}, fmt.Errorf("create model: no model: %w", ErrInvalid)
	}
	if err := in.Model.Validate(); err != nil {
		return Summary{}, fmt.Errorf("create model: %w: %w", ErrInvalid, err)
	}
	blob, err := Encode(in.Model)
	if err != nil {
		return Summary{}, fmt.Errorf("create model: %w", err)
	}
	trained, err := jsonOrEmpty(in.TrainedOn)
	if err != nil {
		return Summary{}, fmt.Errorf("create model: trained_on: %w", err)
	}
	scores, err := jsonOrEmpty(in.Scores)
	if err != nil {
		return Summary{}, fmt.Errorf("create model: scores: %w", err)
	}
	row := r.db.QueryRowContext(ctx, `INSERT INTO topic_models (name, model, topics, terms, trained_on, scores, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+summaryColumns,
		name, blob, pq.StringArray(in.Model.Topics), len(in.Model.Terms), trained, scores, in.CreatedBy)
	s, err := scanSummary(row)
	if err != nil {
		return Summary{}, dbError("create model", err)
	}
	return s, nil
}

func jsonOrEmpty(v any) ([]byte, error) {
	if v == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(v)
}

// List returns every stored model, newest first.
func (r *Repository) List(ctx context.Context) ([]Summary, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+summaryColumns+` FROM topic_models ORDER BY id DESC`)
	if err != nil {
		return nil, dbError("list models", err)
	}
	defer rows.Close()
	out := []Summary{}
	for rows.Next() {
		s, err := scanSummary(rows)
		if err != nil {
			return nil, dbError("list models", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("list models", err)
	}
	return out, nil
}

// Get returns one model's summary.
func (r *Repository) Get(ctx context.Context, id int64) (Summary, error) {
	s, err := scanSummary(r.db.QueryRowContext(ctx, `SELECT `+summaryColumns+` FROM topic_models WHERE id = $1`, id))
	if err != nil {
		return Summary{}, dbError("get model", err)
	}
	return s, nil
}

// Load returns one model's weights.
func (r *Repository) Load(ctx context.Context, id int64) (*topicmodel.Model, error) {
	var blob []byte
	if err := r.db.QueryRowContext(ctx, `SELECT model FROM topic_models WHERE id = $1`, id).Scan(&blob); err != nil {
		return nil, dbError("load model", err)
	}
	m, err := Decode(blob)
	if err != nil {
		return nil, fmt.Errorf("load model %d: %w", id, err)
	}
	return m, nil
}

// InUse is what decides topics: the active model and the candidate (zero
// ids when none), and the candidate's rollout share.
type InUse struct {
	Active, Candidate int64
	RolloutPercent    int
}

// InUse reads the active model and the candidate.
func (r *Repository) InUse(ctx context.Context) (InUse, error) {
	var u InUse
	rows, err := r.db.QueryContext(ctx, `SELECT id, status, rollout_percent FROM topic_models WHERE status IN ('active', 'candidate')`)
	if err != nil {
		return u, dbError("models in use", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var status string
		var pct int
		if err := rows.Scan(&id, &status, &pct); err != nil {
			return u, dbError("models in use", err)
		}
		if status == StatusActive {
			u.Active = id
		} else {
			u.Candidate, u.RolloutPercent = id, pct
		}
	}
	if err := rows.Err(); err != nil {
		return u, dbError("models in use", err)
	}
	return u, nil
}

// SetCandidate makes model id the candidate with a rollout share (0: shadow
// only, scored beside the active model and deciding nothing), in place of
// any other candidate (which becomes inactive). The active model cannot be
// the candidate.
func (r *Repository) SetCandidate(ctx context.Context, id int64, percent int) (Summary, error) {
	if percent < 0 || percent > 100 {
		return Summary{}, fmt.Errorf("set candidate: rollout_percent %d outside 0..100: %w", percent, ErrInvalid)
	}
	return r.transition(ctx, "set candidate", id, func(tx *sql.Tx, status string) error {
		if status == StatusActive {
			return fmt.Errorf("set candidate: model %d is the active model: %w", id, ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE topic_models SET status = 'inactive', rollout_percent = 0, status_at = NOW()
			WHERE status = 'candidate' AND id <> $1`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE topic_models SET status = 'candidate', rollout_percent = $2, status_at = NOW() WHERE id = $1`, id, percent)
		return err
	})
}

// ClearCandidate makes the candidate inactive: nothing is scored in shadow
// and the active model (or the lexicon) decides every document. It returns
// the model that was the candidate (ErrNotFound when there was none).
func (r *Repository) ClearCandidate(ctx context.Context) (Summary, error) {
	s, err := scanSummary(r.db.QueryRowContext(ctx, `UPDATE topic_models SET status = 'inactive', rollout_percent = 0, status_at = NOW()
		WHERE status = 'candidate' RETURNING `+summaryColumns))
	if err != nil {
		return Summary{}, dbError("clear candidate", err)
	}
	return s, nil
}

// Promote makes model id the active model; the previous active model is
// retired (the one a rollback brings back).
func (r *Repository) Promote(ctx context.Context, id int64) (Summary, error) {
	return r.transition(ctx, "promote model", id, func(tx *sql.Tx, status string) error {
		if status == StatusActive {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE topic_models SET status = 'retired', rollout_percent = 0, status_at = NOW()
			WHERE status = 'active'`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE topic_models SET status = 'active', rollout_percent = 0, status_at = NOW() WHERE id = $1`, id)
		return err
	})
}

// Rollback takes the active model out of use (inactive) and brings back the
// most recently retired one; with none, the shipped lexicon decides again.
// It returns the model now active, nil for the lexicon, and ErrNotFound
// when no model was active.
func (r *Repository) Rollback(ctx context.Context) (*Summary, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, dbError("rollback model", err)
	}
	defer func() { _ = tx.Rollback() }()
	var active int64
	if err := tx.QueryRowContext(ctx, `UPDATE topic_models SET status = 'inactive', status_at = NOW()
		WHERE status = 'active' RETURNING id`).Scan(&active); err != nil {
		return nil, dbError("rollback model", err)
	}
	var now *Summary
	s, err := scanSummary(tx.QueryRowContext(ctx, `UPDATE topic_models SET status = 'active', status_at = NOW()
		WHERE id = (SELECT id FROM topic_models WHERE status = 'retired' ORDER BY status_at DESC, id DESC LIMIT 1)
		RETURNING `+summaryColumns))
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, dbError("rollback model", err)
	default:
		now = &s
	}
	if err := tx.Commit(); err != nil {
		return nil, dbError("rollback model", err)
	}
	return now, nil
}

// Delete removes a model that is not in use (inactive or retired).
func (r *Repository) Delete(ctx context.Context, id int64) error {
	res, err := r.db.ExecContext(ctx, `DELETE FROM topic_models WHERE id = $1 AND status IN ('inactive', 'retired')`, id)
	if err != nil {
		return dbError("delete model", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	s, err := r.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("delete model: %w", err)
	}
	return fmt.Errorf("delete model: model %d is %s: %w", id, s.Status, ErrConflict)
}

// transition runs change on model id (locked, with its current status) in
// a transaction and returns the model's summary after it.
func (r *Repository) transition(ctx context.Context, op string, id int64, change func(tx *sql.Tx, status string) error) (Summary, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return Summary{}, dbError(op, err)
	}
	defer func() { _ = tx.Rollback() }()
	// Status changes are serialized, so two promotions cannot both see the
	// old active model.
	if _, err := tx.ExecContext(ctx, `LOCK TABLE topic_models IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return Summary{}, dbError(op, err)
	}
	var status string
	if err := tx.QueryRowContext(ctx, `SELECT status FROM topic_models WHERE id = $1`, id).Scan(&status); err != nil {
		return Summary{}, dbError(op+": get", err)
	}
	if err := change(tx, status); err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) {
			return Summary{}, err
		}
		return Summary{}, dbError(op, err)
	}
	if err := tx.Commit(); err != nil {
		return Summary{}, dbError(op, err)
	}
	s, err := r.Get(ctx, id)
	if err != nil {
		return Summary{}, fmt.Errorf("%s: %w", op, err)
	}
	return s, nil
}

func dbError(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	if rulestore.IsUnavailable(err) {
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	if pqErr := pq.As(err); pqErr != nil && pqErr.Code == "23514" {
		return fmt.Errorf("%s: %w: %s", op, ErrInvalid, pqErr.Message)
	}
	return fmt.Errorf("%s: %w", op, err)
}
