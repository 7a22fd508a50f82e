// Package republish decides whether a classification is news to
// subscribers. Every document's last published outcome is remembered with
// its version (published_outcomes): a classification with the same
// outcome is not published again; a different one (a rule edit, a DLQ
// requeue, a reprocess) is published with the next version and the names
// of the fields that changed.
//
// The idempotency key of a message is (index, id, version): the outbox
// refuses a second row with the same key, so a crash between the outbox
// insert and Record publishes nothing twice (the next attempt computes the
// same version and its insert is absorbed).
package republish

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
)

// Outcome is what subscribers are told about a document: a change to any
// of these fields is published again.
type Outcome struct {
	ContentType      string   `json:"content_type"`
	Topics           []string `json:"topics"`
	QualityScore     int      `json:"quality_score"`
	IsCrimeRelated   bool     `json:"is_crime_related"`
	CrimeSubcategory string   `json:"crime_subcategory"`
	Title            string   `json:"title"`
	URL              string   `json:"url"`
	CanonicalURL     string   `json:"canonical_url"`
	DuplicateOf      string   `json:"duplicate_of"`
	// TextHash is the exact fingerprint of title and body: an edited body
	// is a new outcome, without keeping the body here.
	TextHash string `json:"text_hash"`
}

// Normalized returns o with its topics sorted, so their order is not a
// change.
func (o Outcome) Normalized() Outcome {
	o.Topics = slices.Clone(o.Topics)
	slices.Sort(o.Topics)
	if o.Topics == nil {
		o.Topics = []string{}
	}
	return o
}

// Changed lists the JSON names of the fields in which a and b differ.
func Changed(a, b Outcome) []string {
	a, b = a.Normalized(), b.Normalized()
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("json"), ",")
			out = append(out, name)
		}
	}
	return out
}

// Item is one document's new outcome.
type Item struct {
	Key     domain.DocKey
	Outcome Outcome
}

// Decision is what to do with one Item.
type Decision struct {
	// Publish is false when the outcome equals the last published one.
	Publish bool
	// Version is the message's version when Publish (1 for a first
	// publish), otherwise the version subscribers already have.
	Version int
	// Changed names the fields that differ from the last published
	// outcome; nil for a first publish.
	Changed []string
}

// Store keeps published outcomes in the classifier's database.
type Store struct {
	db *sql.DB
}

// New returns a Store over the classifier's database.
func New(db *sql.DB) *Store { return &Store{db: db} }

// Plan reads the last published outcomes of items and decides, per item,
// whether and under which version it is published. Several items of one
// document in a batch are decided in order.
func (s *Store) Plan(ctx context.Context, items []Item) ([]Decision, error) {
	if len(items) == 0 {
		return nil, nil
	}
	indices, ids := make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		indices[i], ids[i] = it.Key.Index, it.Key.ID
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT p.index_name, p.content_id, p.version, p.outcome
		  FROM published_outcomes p
		  JOIN unnest($1::text[], $2::text[]) AS k(idx, id) ON p.index_name = k.idx AND p.content_id = k.id`,
		pq.Array(indices), pq.Array(ids))
	if err != nil {
		return nil, fmt.Errorf("read published outcomes: %w", err)
	}
	defer rows.Close()
	type last struct {
		version int
		outcome Outcome
	}
	known := make(map[domain.DocKey]last, len(items))
	for rows.Next() {
		var k domain.DocKey
		var l last
		var raw []byte
		if err := rows.Scan(&k.Index, &k.ID, &l.version, &raw); err != nil {
			return nil, fmt.Errorf("read published outcomes: %w", err)
		}
		if err := json.Unmarshal(raw, &l.outcome); err != nil {
			return nil, fmt.Errorf("read published outcome of %s/%s: %w", k.Index, k.ID, err)
		}
		known[k] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read published outcomes: %w", err)
	}
	out := make([]Decision, len(items))
	for i, it := range items {
		prev, ok := known[it.Key]
		switch {
		case !ok:
			out[i] = Decision{Publish: true, Version: 1}
		default:
			if changed := Changed(prev.outcome, it.Outcome); len(changed) > 0 {
				out[i] = Decision{Publish: true, Version: prev.version + 1, Changed: changed}
			} else {
				out[i] = Decision{Version: prev.version}
			}
		}
		if out[i].Publish {
			known[it.Key] = last{version: out[i].Version, outcome: it.Outcome}
		}
	}
	return out, nil
}

// Record remembers the published items' outcomes, after their outbox rows
// are written. A version never goes back: recording an older version than
// the one stored (a late retry) changes nothing.
func (s *Store) Record(ctx context.Context, items []Item, decisions []Decision) error {
	if len(items) != len(decisions) {
		return fmt.Errorf("record published outcomes: %d items, %d decisions", len(items), len(decisions))
	}
	latest := make(map[domain.DocKey]int, len(items))
	for i, d := range decisions {
		if d.Publish {
			latest[items[i].Key] = i
		}
	}
	if len(latest) == 0 {
		return nil
	}
	var indices, ids, outcomes []string
	var versions []int64
	for k, i := range latest {
		raw, err := json.Marshal(items[i].Outcome.Normalized())
		if err != nil {
			return fmt.Errorf("record published outcome of %s/%s: %w", k.Index, k.ID, err)
		}
		indices, ids = append(indices, k.Index), append(ids, k.ID)
		versions, outcomes = append(versions, int64(decisions[i].Version)), append(outcomes, string(raw))
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO published_outcomes AS p (index_name, content_id, version, outcome)
		SELECT idx, id, v, o::jsonb FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS t(idx, id, v, o)
		ON CONFLICT (index_name, content_id) DO UPDATE
		   SET version = EXCLUDED.version, outcome = EXCLUDED.outcome, published_at = NOW()
		 WHERE p.version < EXCLUDED.version`,
		pq.Array(indices), pq.Array(ids), pq.Array(versions), pq.Array(outcomes))
	if err != nil {
		return fmt.Errorf("record published outcomes: %w", err)
	}
	return nil
}
