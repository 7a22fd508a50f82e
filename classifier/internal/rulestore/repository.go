package rulestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/infrastructure/fault"
	"github.com/north-cloud/infrastructure/sqlwhere"
)

// NotifyChannel is the Postgres channel the classification_rules triggers
// NOTIFY on, with the new rule-set version as payload.
const NotifyChannel = "classification_rules"

// SeedDefaultRules is the seed of the rows migration 005 inserts.
const SeedDefaultRules = "005_default_rules"

// SeedDefaultRulesV2 is the seed of the default rules migration 007 inserts
// or upgrades from 005 (those nobody had edited).
const SeedDefaultRulesV2 = "007_default_rules"

// Repository reads and writes classification_rules. It is safe for
// concurrent use. Every write changes the rule-set version in the same
// transaction (a database trigger), which is what Watchers reload on.
type Repository struct {
	db *sql.DB
}

// NewRepository returns a Repository over db, the classifier's database with
// migration 002 applied.
func NewRepository(db *sql.DB) *Repository {
	return &Repository{db: db}
}

const ruleColumns = `id, name, topic, keywords, min_confidence, priority, enabled, min_keywords, effect, COALESCE(seed, ''), created_at, updated_at`

type scanner interface {
	Scan(dest ...any) error
}

func scanRule(s scanner) (Rule, error) {
	var r Rule
	var kws pq.StringArray
	err := s.Scan(&r.ID, &r.Name, &r.Topic, &kws, &r.MinConfidence, &r.Priority, &r.Enabled, &r.MinKeywords, &r.Effect, &r.Seed, &r.CreatedAt, &r.UpdatedAt)
	if kws == nil {
		kws = pq.StringArray{}
	}
	r.Keywords = kws
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r, err
}

// List returns the rules f selects, highest priority first, then by name.
func (r *Repository) List(ctx context.Context, f Filter) ([]Rule, error) {
	var w sqlwhere.Builder
	if f.Topic != "" {
		w.Add("topic = ?", f.Topic)
	}
	if f.Enabled != nil {
		w.Add("enabled = ?", *f.Enabled)
	}
	rows, err := r.db.QueryContext(ctx, `SELECT `+ruleColumns+` FROM classification_rules`+w.Where()+
		` ORDER BY priority DESC, name, id`, w.Args()...)
	if err != nil {
		return nil, dbError("list rules", err)
	}
	defer rows.Close()
	out := []Rule{}
	for rows.Next() {
		rule, err := scanRule(rows)
		if err != nil {
			return nil, dbError("list rules", err)
		}
		out = append(out, rule)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("list rules", err)
	}
	return out, nil
}

// Get returns rule id, or ErrNotFound.
func (r *Repository) Get(ctx context.Context, id int64) (Rule, error) {
	rule, err := scanRule(r.db.QueryRowContext(ctx, `SELECT `+ruleColumns+` FROM classification_rules WHERE id = $1`, id))
	if err != nil {
		return Rule{}, dbError(fmt.Sprintf("get rule %d", id), err)
	}
	return rule, nil
}

// Create validates in and inserts it (a nil Effect is support). It fails
// with a *ValidationError (ErrInvalid) or ErrConflict when the name is
// taken.
func (r *Repository) Create(ctx context.Context, in Input) (Rule, error) {
	if in.Effect == nil {
		support := rules.EffectSupport
		in.Effect = &support
	}
	in, err := Validate(in)
	if err != nil {
		return Rule{}, fmt.Errorf("create rule: %w", err)
	}
	op := fmt.Sprintf("create rule %q", in.Name)
	return r.withinBudget(ctx, op, 0, in.Enabled, in.Keywords, func(tx *sql.Tx) (Rule, error) {
		return scanRule(tx.QueryRowContext(ctx, `
		INSERT INTO classification_rules (name, topic, keywords, min_confidence, priority, enabled, min_keywords, effect)
		VALUES ($1, $2, $3, $4, $5, $6, COALESCE($7, 0), $8)
		RETURNING `+ruleColumns,
			in.Name, in.Topic, pq.StringArray(in.Keywords), in.MinConfidence, in.Priority, in.Enabled, in.MinKeywords, string(*in.Effect)))
	})
}

// Update validates in and replaces every editable field of rule id with it
// (a nil MinKeywords or Effect keeps the rule's). It fails with
// ErrNotFound, a *ValidationError (ErrInvalid) or ErrConflict.
func (r *Repository) Update(ctx context.Context, id int64, in Input) (Rule, error) {
	in, err := Validate(in)
	if err != nil {
		return Rule{}, fmt.Errorf("update rule %d: %w", id, err)
	}
	return r.withinBudget(ctx, fmt.Sprintf("update rule %d", id), id, in.Enabled, in.Keywords, func(tx *sql.Tx) (Rule, error) {
		if in.Effect == nil {
			// The rule keeps its effect, which must still suit the topic.
			var current rules.Effect
			if err := tx.QueryRowContext(ctx, `SELECT effect FROM classification_rules WHERE id = $1 FOR UPDATE`, id).Scan(&current); err != nil {
				return Rule{}, err
			}
			if p := topicEffectProblem(in.Topic, current); p != "" {
				return Rule{}, &ValidationError{Problems: []FieldError{{Field: "topic", Message: p}}}
			}
			in.Effect = &current
		}
		return scanRule(tx.QueryRowContext(ctx, `
		UPDATE classification_rules
		   SET name = $2, topic = $3, keywords = $4, min_confidence = $5, priority = $6, enabled = $7,
		       min_keywords = COALESCE($8, LEAST(min_keywords, cardinality($4::text[]))), effect = $9
		 WHERE id = $1
		RETURNING `+ruleColumns,
			id, in.Name, in.Topic, pq.StringArray(in.Keywords), in.MinConfidence, in.Priority, in.Enabled, in.MinKeywords, string(*in.Effect)))
	})
}

// SetEnabled enables or disables rule id and returns it. Setting the state
// it already has writes nothing, so it triggers no reload.
func (r *Repository) SetEnabled(ctx context.Context, id int64, enabled bool) (Rule, error) {
	op := fmt.Sprintf("enable rule %d", id)
	if !enabled {
		op = fmt.Sprintf("disable rule %d", id)
	}
	if enabled {
		// Enabling adds the rule's keywords to the engine: within budget.
		current, err := r.Get(ctx, id)
		if err != nil {
			return Rule{}, err
		}
		if current.Enabled {
			return current, nil
		}
		return r.withinBudget(ctx, op, id, true, current.Keywords, func(tx *sql.Tx) (Rule, error) {
			return scanRule(tx.QueryRowContext(ctx, `UPDATE classification_rules SET enabled = TRUE WHERE id = $1 RETURNING `+ruleColumns, id))
		})
	}
	rule, err := scanRule(r.db.QueryRowContext(ctx, `
		UPDATE classification_rules SET enabled = $2
		 WHERE id = $1 AND enabled IS DISTINCT FROM $2
		RETURNING `+ruleColumns, id, enabled))
	if errors.Is(err, sql.ErrNoRows) {
		// Either no such rule or already in that state.
		return r.Get(ctx, id)
	}
	if err != nil {
		return Rule{}, dbError(op, err)
	}
	return rule, nil
}

// Delete removes rule id, or fails with ErrNotFound.
func (r *Repository) Delete(ctx context.Context, id int64) error {
	res, err := r.db.ExecContext(ctx, `DELETE FROM classification_rules WHERE id = $1`, id)
	if err != nil {
		return dbError(fmt.Sprintf("delete rule %d", id), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbError(fmt.Sprintf("delete rule %d", id), err)
	}
	if n == 0 {
		return fmt.Errorf("delete rule %d: %w", id, ErrNotFound)
	}
	return nil
}

// Version returns the current rule-set version: it changes, in the same
// transaction, with every statement that changes classification_rules.
func (r *Repository) Version(ctx context.Context) (int64, error) {
	var v int64
	if err := r.db.QueryRowContext(ctx, `SELECT version FROM classification_rules_state WHERE id`).Scan(&v); err != nil {
		return 0, dbError("read rules version", err)
	}
	return v, nil
}

// LoadEnabled returns the enabled rules, in engine form, and the rule-set
// version they belong to, read from one snapshot of the database.
func (r *Repository) LoadEnabled(ctx context.Context) ([]rules.Rule, int64, error) {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, 0, dbError("load rules", err)
	}
	defer func() { _ = tx.Rollback() }()
	var version int64
	if err := tx.QueryRowContext(ctx, `SELECT version FROM classification_rules_state WHERE id`).Scan(&version); err != nil {
		return nil, 0, dbError("load rules: version", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+ruleColumns+` FROM classification_rules WHERE enabled ORDER BY id`)
	if err != nil {
		return nil, 0, dbError("load rules", err)
	}
	defer rows.Close()
	out := []rules.Rule{}
	for rows.Next() {
		rule, err := scanRule(rows)
		if err != nil {
			return nil, 0, dbError("load rules", err)
		}
		out = append(out, rule.EngineRule())
	}
	if err := rows.Err(); err != nil {
		return nil, 0, dbError("load rules", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, 0, dbError("load rules", err)
	}
	return out, version, nil
}

// withinBudget runs write in a transaction after checking that the rule set
// it leaves stays within the budget (CheckSetBudget): the rule count, and
// the keyword bytes of the enabled rules with rule id (0 for a new rule)
// replaced by one with keywords, enabled or not. Writers of the rule set
// take one advisory lock first, so two concurrent creates cannot both fit
// into the last room.
func (r *Repository) withinBudget(ctx context.Context, op string, id int64, enabled bool, keywords []string, write func(tx *sql.Tx) (Rule, error)) (Rule, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return Rule{}, dbError(op, err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('classification_rules_budget'))`); err != nil {
		return Rule{}, dbError(op, err)
	}
	var others int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM classification_rules WHERE id <> $1`, id).Scan(&others); err != nil {
		return Rule{}, dbError(op, err)
	}
	if others+1 > MaxRules {
		return Rule{}, fmt.Errorf("%s: %w", op, &budgetError{fmt.Sprintf("at most %d rules are allowed", MaxRules)})
	}
	total := 0
	if enabled {
		total = ruleCost(keywords)
	}
	rows, err := tx.QueryContext(ctx, `SELECT keywords FROM classification_rules WHERE enabled AND id <> $1`, id)
	if err != nil {
		return Rule{}, dbError(op, err)
	}
	for rows.Next() {
		var kws pq.StringArray
		if err := rows.Scan(&kws); err != nil {
			rows.Close()
			return Rule{}, dbError(op, err)
		}
		total += ruleCost(kws)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Rule{}, dbError(op, err)
	}
	if total > MaxSetKeywordBytes {
		return Rule{}, fmt.Errorf("%s: %w", op, &budgetError{fmt.Sprintf(
			"the enabled rules would hold %d keyword bytes (normalized), at most %d are allowed; disable or shorten rules first",
			total, MaxSetKeywordBytes)})
	}
	rule, err := write(tx)
	if err != nil {
		return Rule{}, dbError(op, err)
	}
	if err := tx.Commit(); err != nil {
		return Rule{}, dbError(op, err)
	}
	return rule, nil
}

// dbError maps a database error to the package's sentinels, prefixed with
// op: no rows is ErrNotFound, a taken name ErrConflict, a check constraint
// ErrInvalid, and a connection problem or timeout ErrUnavailable.
func dbError(op string, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	case IsUnavailable(err):
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	if pqErr := pq.As(err); pqErr != nil {
		switch pqErr.Code {
		case "23505": // unique_violation: the only unique key is the name
			return fmt.Errorf("%s: %w", op, ErrConflict)
		case "23514": // check_violation: Validate should have caught it
			return fmt.Errorf("%s: %w: %s", op, ErrInvalid, pqErr.Message)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// IsUnavailable reports whether err means the database could not be used:
// ErrUnavailable, an availability error of the shared fault policy
// (infrastructure/fault: connection lost or refused, credentials, too many
// connections, shutting down, read-only), or a request that did not answer
// in time (a 503 to the caller; nothing here opens a breaker).
func IsUnavailable(err error) bool {
	return err != nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || fault.PostgresUnavailable(err))
}
