// Package republish decides whether a classification is news to
// subscribers. Every document's last published outcome is remembered with
// its version (published_outcomes): a classification with the same
// outcome is not published again; a different one (a rule edit, a DLQ
// requeue, a reprocess) is published with the next version and the names
// of the fields that changed.
//
// The idempotency key of a message is (index, id, version): the outbox
// refuses a second row with the same key. The outbox is in the publisher's
// database, so the version is reserved here (Reserve, table
// publish_reservations) before the outbox row is written, and Record clears
// the reservation after. A crash between the outbox insert and Record
// publishes nothing twice: the next attempt with the same outcome finds the
// reservation and takes the same version (its insert is absorbed); one with
// a different outcome (rules edited meanwhile) takes the next version, so
// subscribers are never left with the outcome of the absorbed row.
package republish

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
)

// Outcome is what subscribers are told about a document: a change to any
// of these fields is published again.
type Outcome struct {
	ContentType string   `json:"content_type"`
	Topics      []string `json:"topics"`
	// PrimaryTopic is the document's section: a new primary among the same
	// topics (the model retrained, a label learned) is news to subscribers
	// that route on it. Its confidence is not part of the outcome.
	PrimaryTopic     string `json:"primary_topic"`
	QualityScore     int    `json:"quality_score"`
	IsCrimeRelated   bool   `json:"is_crime_related"`
	CrimeSubcategory string `json:"crime_subcategory"`
	Title            string `json:"title"`
	URL              string `json:"url"`
	CanonicalURL     string `json:"canonical_url"`
	DuplicateOf      string `json:"duplicate_of"`
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

// Plan reads the last published outcomes of items and their reserved
// versions, and decides, per item, whether and under which version it is
// published. Several items of one document in a batch are decided in order.
// Plan writes nothing: Reserve the versions of the items that will be
// published before writing their outbox rows.
func (s *Store) Plan(ctx context.Context, items []Item) ([]Decision, error) {
	if len(items) == 0 {
		return nil, nil
	}
	indices, ids := make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		indices[i], ids[i] = it.Key.Index, it.Key.ID
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT k.idx, k.id, p.version, p.outcome, r.version, r.outcome
		  FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[])) AS k(idx, id)
		  LEFT JOIN published_outcomes p ON p.index_name = k.idx AND p.content_id = k.id
		  LEFT JOIN publish_reservations r ON r.index_name = k.idx AND r.content_id = k.id
		 WHERE p.version IS NOT NULL OR r.version IS NOT NULL`,
		pq.Array(indices), pq.Array(ids))
	if err != nil {
		return nil, fmt.Errorf("read published outcomes: %w", err)
	}
	defer rows.Close()
	known := make(map[domain.DocKey]last, len(items))
	for rows.Next() {
		var k domain.DocKey
		var version, reserved sql.NullInt64
		var raw, rawReserved []byte
		if err := rows.Scan(&k.Index, &k.ID, &version, &raw, &reserved, &rawReserved); err != nil {
			return nil, fmt.Errorf("read published outcomes: %w", err)
		}
		// A version without its outcome was forgotten by Cleanup.
		l := last{version: int(version.Int64), reserved: int(reserved.Int64), forgotten: version.Valid && raw == nil}
		if err := decodeOutcome(raw, &l.outcome); err != nil {
			return nil, fmt.Errorf("read published outcome of %s/%s: %w", k.Index, k.ID, err)
		}
		if err := decodeOutcome(rawReserved, &l.reservedOutcome); err != nil {
			return nil, fmt.Errorf("read reserved outcome of %s/%s: %w", k.Index, k.ID, err)
		}
		known[k] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read published outcomes: %w", err)
	}
	out := make([]Decision, len(items))
	for i, it := range items {
		prev, ok := known[it.Key]
		out[i] = prev.decide(ok, it.Outcome)
		if out[i].Publish {
			known[it.Key] = last{version: out[i].Version, outcome: it.Outcome}
		}
	}
	return out, nil
}

// last is what a document's subscribers have: its last recorded outcome
// (version 0: none), and a version reserved above it (0: none) whose
// outbox row may exist. forgotten: the version is kept but its outcome was
// forgotten (Cleanup).
type last struct {
	version, reserved        int
	outcome, reservedOutcome Outcome
	forgotten                bool
}

// decide is the decision on outcome o of a document whose state is l (ok:
// the document has a recorded or reserved outcome).
func (l last) decide(ok bool, o Outcome) Decision {
	var changed []string
	if l.version > 0 && !l.forgotten {
		changed = news(l.outcome, o)
	}
	switch {
	case ok && l.reserved > l.version:
		// An attempt reserved this version and may have written its outbox
		// row. With the same outcome this attempt writes the same version,
		// absorbed if the row is there, so two attempts at one document
		// (a replica killed before its record, a zombie and the replica that
		// took over) publish it once. With another outcome (rules edited
		// between the attempts) the row may be out with the old one: the
		// new outcome takes the next version, so subscribers are told.
		again := news(l.reservedOutcome, o)
		if len(again) == 0 {
			return Decision{Publish: true, Version: l.reserved, Changed: changed}
		}
		for _, f := range again {
			if !slices.Contains(changed, f) {
				changed = append(changed, f)
			}
		}
		return Decision{Publish: true, Version: l.reserved + 1, Changed: changed}
	case !ok || l.version == 0:
		return Decision{Publish: true, Version: 1}
	case l.forgotten:
		// What subscribers were told is forgotten, not under which
		// version: publish it as news, above every version whose outbox
		// row may still be there (a reused version would be absorbed).
		return Decision{Publish: true, Version: l.version + 1}
	case len(changed) > 0:
		return Decision{Publish: true, Version: l.version + 1, Changed: changed}
	default:
		return Decision{Version: l.version}
	}
}

// news lists the fields of o that are news to subscribers who have prev.
// The same text, classified the same way, judged a duplicate differently
// is not: a document classified again after its outbox row was written (a
// replica killed before its flip, a zombie's takeover) can see other
// documents first (one another replica recorded meanwhile with an earlier
// first_seen_at). The duplicate verdict of a text is decided once:
// publishing it again would deliver the same article twice.
func news(prev, o Outcome) []string {
	changed := Changed(prev, o)
	if slices.Equal(changed, []string{"duplicate_of"}) {
		return nil
	}
	return changed
}

func decodeOutcome(raw []byte, o *Outcome) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(raw, o)
}

// Reserve records the versions of the items that will be published, before
// their outbox rows are written (package comment). A reservation never
// goes back to a lower version.
func (s *Store) Reserve(ctx context.Context, items []Item, decisions []Decision) error {
	indices, ids, versions, outcomes, err := latestPublished(items, decisions)
	if err != nil || len(indices) == 0 {
		return err
	}
	_, err = s.db.ExecContext(ctx, `
		INSERT INTO publish_reservations AS r (index_name, content_id, version, outcome)
		SELECT idx, id, v, o::jsonb FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS t(idx, id, v, o)
		ON CONFLICT (index_name, content_id) DO UPDATE
		   SET version = EXCLUDED.version, outcome = EXCLUDED.outcome, reserved_at = NOW()
		 WHERE r.version <= EXCLUDED.version`,
		pq.Array(indices), pq.Array(ids), pq.Array(versions), pq.Array(outcomes))
	if err != nil {
		return fmt.Errorf("reserve publish versions: %w", err)
	}
	return nil
}

// latestPublished returns, per document, the columns of its last item to
// publish.
func latestPublished(items []Item, decisions []Decision) (indices, ids []string, versions []int64, outcomes []string, err error) {
	if len(items) != len(decisions) {
		return nil, nil, nil, nil, fmt.Errorf("%d items, %d decisions", len(items), len(decisions))
	}
	latest := make(map[domain.DocKey]int, len(items))
	for i, d := range decisions {
		if d.Publish {
			latest[items[i].Key] = i
		}
	}
	for k, i := range latest {
		raw, err := json.Marshal(items[i].Outcome.Normalized())
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("outcome of %s/%s: %w", k.Index, k.ID, err)
		}
		indices, ids = append(indices, k.Index), append(ids, k.ID)
		versions, outcomes = append(versions, int64(decisions[i].Version)), append(outcomes, string(raw))
	}
	return indices, ids, versions, outcomes, nil
}

// Superseded reports, per item, whether a version above the one decided
// for it has been reserved or published since: another attempt at the
// document (a replica that took it over while this one was paused) decided
// after this one and publishes its own outcome, so this one's is stale and
// must not be written to the outbox. It is read right before the outbox
// insert, which narrows a paused replica's window to these two statements.
func (s *Store) Superseded(ctx context.Context, items []Item, decisions []Decision) ([]bool, error) {
	if len(items) != len(decisions) {
		return nil, fmt.Errorf("superseded: %d items, %d decisions", len(items), len(decisions))
	}
	out := make([]bool, len(items))
	if len(items) == 0 {
		return out, nil
	}
	indices, ids := make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		indices[i], ids[i] = it.Key.Index, it.Key.ID
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT k.idx, k.id, GREATEST(COALESCE(p.version, 0), COALESCE(r.version, 0))
		  FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[])) AS k(idx, id)
		  LEFT JOIN published_outcomes p ON p.index_name = k.idx AND p.content_id = k.id
		  LEFT JOIN publish_reservations r ON r.index_name = k.idx AND r.content_id = k.id`,
		pq.Array(indices), pq.Array(ids))
	if err != nil {
		return nil, fmt.Errorf("read newer versions: %w", err)
	}
	defer rows.Close()
	newest := make(map[domain.DocKey]int, len(items))
	for rows.Next() {
		var k domain.DocKey
		var v int
		if err := rows.Scan(&k.Index, &k.ID, &v); err != nil {
			return nil, fmt.Errorf("read newer versions: %w", err)
		}
		newest[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read newer versions: %w", err)
	}
	for i, it := range items {
		out[i] = decisions[i].Publish && newest[it.Key] > decisions[i].Version
	}
	return out, nil
}

// Record remembers the published items' outcomes, after their outbox rows
// are written, and clears their reservations. A version never goes back:
// recording an older version than the one stored (a late retry) changes
// nothing.
func (s *Store) Record(ctx context.Context, items []Item, decisions []Decision) error {
	indices, ids, versions, outcomes, err := latestPublished(items, decisions)
	if err != nil {
		return fmt.Errorf("record published outcomes: %w", err)
	}
	if len(indices) == 0 {
		return nil
	}
	_, err = s.db.ExecContext(ctx, `
		WITH t AS (SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS t(idx, id, v, o)),
		ins AS (
			INSERT INTO published_outcomes AS p (index_name, content_id, version, outcome)
			SELECT idx, id, v, o::jsonb FROM t
			ON CONFLICT (index_name, content_id) DO UPDATE
			   SET version = EXCLUDED.version, outcome = EXCLUDED.outcome, published_at = NOW()
			 WHERE p.version < EXCLUDED.version)
		DELETE FROM publish_reservations r USING t
		 WHERE r.index_name = t.idx AND r.content_id = t.id AND r.version <= t.v`,
		pq.Array(indices), pq.Array(ids), pq.Array(versions), pq.Array(outcomes))
	if err != nil {
		return fmt.Errorf("record published outcomes: %w", err)
	}
	return nil
}

// Cleanup forgets, at most limit rows of each table at a time, the
// outcomes published longer than retention ago and the reservations made
// that long ago, and returns how many rows it changed. It forgets what a
// document's subscribers were told, never under which version
// (migration 023): the row stays with its version and no outcome, and a
// stale reservation is folded into that row before it is deleted. A
// document classified again after that is published as news with the next
// version, so a version is never reused for another outcome while the
// publisher may still hold its outbox row. The classifier forgets outcomes
// as long after as it forgets a document's canonical URL and text for
// duplicates (processor.Hygiene.Cleanup).
func (s *Store) Cleanup(ctx context.Context, retention time.Duration, limit int) (int64, error) {
	res, err := s.db.ExecContext(ctx, `
		UPDATE published_outcomes SET outcome = NULL WHERE ctid IN (
			SELECT ctid FROM published_outcomes
			 WHERE outcome IS NOT NULL AND published_at < NOW() - make_interval(secs => $1) LIMIT $2)`,
		retention.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("clean up published_outcomes: %w", err)
	}
	total, _ := res.RowsAffected()
	var folded int64
	err = s.db.QueryRowContext(ctx, `
		WITH old AS (
			DELETE FROM publish_reservations WHERE ctid IN (
				SELECT ctid FROM publish_reservations WHERE reserved_at < NOW() - make_interval(secs => $1) LIMIT $2)
			RETURNING index_name, content_id, version),
		kept AS (
			INSERT INTO published_outcomes AS p (index_name, content_id, version, outcome)
			SELECT index_name, content_id, version, NULL FROM old
			ON CONFLICT (index_name, content_id) DO UPDATE
			   SET version = EXCLUDED.version, outcome = NULL, published_at = NOW()
			 WHERE p.version < EXCLUDED.version)
		SELECT COUNT(*) FROM old`,
		retention.Seconds(), limit).Scan(&folded)
	if err != nil {
		return total, fmt.Errorf("clean up publish_reservations: %w", err)
	}
	return total + folded, nil
}
