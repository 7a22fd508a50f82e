// Package lease keeps the claims on raw documents: one row of raw_claims per
// document some replica is classifying, live while its lease_until is in the
// future.
//
// A claim, a renewal and a release are Postgres statements; the raw
// document is written once, at the commit point, by the status flip
// conditional on the version the search returned (the seq_no and
// primary_term a Claim carries), within the incarnation of the index the
// claim names (IndexUUID). A lease that expires is taken over by the next
// replica that finds the document pending; the takeover counts a stall and
// gives the row a new claim_id, so the old owner's Renew (the one ownership
// check, also the committer's before a commit) no longer finds it, and it
// writes nothing of the document.
package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/config"
)

// Defaults of Config.
const (
	// LeaseDefault is how long a claim keeps other replicas away unless
	// renewed (CLASSIFIER_CLAIM_LEASE).
	LeaseDefault = 15 * time.Second
	// HoldDefault is how long a finished claim still keeps the document
	// out of every replica's searches: two of the raw indices' refresh
	// intervals (contentindex sets 1 s), after which a search sees the
	// flipped status.
	HoldDefault = 2 * time.Second
	// KeepDefault is how long a finished claim is kept: far longer than
	// any refresh of a raw index.
	KeepDefault = time.Minute
)

// Config configures a Store.
type Config struct {
	// DB is the classifier's database (migration 016_raw_claims). Required.
	DB *sql.DB
	// Replica is this replica's claimed_by (CLASSIFIER_ID). Required.
	Replica string
	// Lease is how long a claim or renewal holds. Defaults to LeaseDefault.
	Lease time.Duration
	// Hold is how long a finished claim keeps its document out of the
	// searches. Defaults to HoldDefault.
	Hold time.Duration
	// Keep is how long a finished claim is kept, refusing a claim at the
	// version it finished (a search older than the flip). Defaults to
	// KeepDefault.
	Keep time.Duration
}

// Store is the raw_claims table. It is safe for concurrent use.
type Store struct {
	cfg Config
}

// New returns a Store.
func New(cfg Config) (*Store, error) {
	if cfg.DB == nil || cfg.Replica == "" {
		return nil, errors.New("new lease store: DB and Replica are required")
	}
	cfg.Lease = config.PositiveOr(cfg.Lease, LeaseDefault)
	cfg.Hold = config.PositiveOr(cfg.Hold, HoldDefault)
	cfg.Keep = config.PositiveOr(cfg.Keep, KeepDefault)
	return &Store{cfg: cfg}, nil
}

// Replica returns the claimed_by of this store's claims.
func (s *Store) Replica() string { return s.cfg.Replica }

// Lease returns the lease a claim or renewal holds.
func (s *Store) Lease() time.Duration { return s.cfg.Lease }

// Doc is a document a search found, at the version it returned.
type Doc struct {
	Index string
	// IndexUUID is the index.uuid of the incarnation of Index the search
	// read (an index deleted and created again under its name has a new
	// one); empty when the claimer does not know it.
	IndexUUID   string
	ID          string
	SeqNo       int64
	PrimaryTerm int64
}

// Claim is a claim this replica won: the document, the version the search
// returned (the only version its flip may change), the claim's id (which
// a takeover changes) and how many times the document's lease expired
// before without a commit (Stalls).
type Claim struct {
	Doc
	ClaimID int64
	Stalls  int
}

// key is the form of an index name or id stored in Postgres, whose text
// cannot hold NUL bytes (Elasticsearch ids can): they are dropped, as the
// dead-letter queue does. Two ids that differ only by NUL bytes share one
// claim, so they are classified one after the other.
func key(s string) string { return strings.ReplaceAll(s, "\x00", "") }

// Claim claims docs for this replica in one statement and returns the
// claims it won. A document without a row, or whose row is finished or
// expired, is won; one with a live lease is not. Taking over an expired,
// unfinished claim counts a stall. Each won claim carries the version given
// in docs.
func (s *Store) Claim(ctx context.Context, docs []Doc) ([]Claim, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	idx, ids, uuids := make([]string, len(docs)), make([]string, len(docs)), make([]string, len(docs))
	seqs, terms := make([]int64, len(docs)), make([]int64, len(docs))
	for i, d := range docs {
		idx[i], ids[i], uuids[i], seqs[i], terms[i] = key(d.Index), key(d.ID), d.IndexUUID, d.SeqNo, d.PrimaryTerm
	}
	rows, err := s.cfg.DB.QueryContext(ctx, claimSQL, pq.Array(idx), pq.Array(ids), pq.Array(seqs), pq.Array(terms),
		s.cfg.Replica, s.cfg.Lease.Seconds(), pq.Array(uuids))
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	defer rows.Close()
	out := make([]Claim, 0, len(docs))
	for rows.Next() {
		var c Claim
		if err := rows.Scan(&c.Index, &c.ID, &c.IndexUUID, &c.SeqNo, &c.PrimaryTerm, &c.ClaimID, &c.Stalls); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return out, nil
}

// claimSQL inserts the claims, or takes over unfinished rows whose lease
// has expired, or finished rows when the document is at a newer version
// than the finished claim's (read after its flip: a dead-letter retry, a
// crawler's update). A search that has not seen the flip yet (the raw
// index not refreshed) returns the finished claim's version, which never
// wins: the document is not classified again.
//
// Versions compare only within one incarnation of an index: one deleted
// and created again under its name numbers its documents afresh. A row of
// another incarnation (both index_uuids known and different) is taken over
// whatever its state, without a stall: its document is gone with its index,
// and the old owner's ownership check (Renew) no longer finds its claim.
// Duplicate documents in one batch are claimed once (DISTINCT ON).
const claimSQL = `
INSERT INTO raw_claims AS c (raw_index, doc_id, index_uuid, claimed_by, claimed_at, lease_until, seq_no, primary_term)
SELECT DISTINCT ON (i, d) i, d, u, $5, now(), now() + make_interval(secs => $6), s, t
  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $7::text[]) AS x(i, d, s, t, u)
 ORDER BY i, d
ON CONFLICT (raw_index, doc_id) DO UPDATE
   SET claimed_by = EXCLUDED.claimed_by, claimed_at = EXCLUDED.claimed_at, lease_until = EXCLUDED.lease_until,
       seq_no = EXCLUDED.seq_no, primary_term = EXCLUDED.primary_term, index_uuid = EXCLUDED.index_uuid,
       stalls = CASE WHEN c.done OR ` + otherIncarnation + ` THEN 0 ELSE c.stalls + 1 END, done = FALSE,
       claim_id = nextval(pg_get_serial_sequence('raw_claims', 'claim_id'))
 WHERE ` + otherIncarnation + `
    OR (NOT c.done AND c.lease_until < now())
    OR (c.done AND (EXCLUDED.primary_term, EXCLUDED.seq_no) > (c.primary_term, c.seq_no))
RETURNING raw_index, doc_id, index_uuid, seq_no, primary_term, claim_id, stalls`

// otherIncarnation holds in claimSQL when the row was claimed in another
// incarnation of its index than the claim's.
const otherIncarnation = `(c.index_uuid <> '' AND EXCLUDED.index_uuid <> '' AND c.index_uuid <> EXCLUDED.index_uuid)`

// Renew moves the lease of claims forward and returns the ids of those
// still this replica's; a claim not returned was taken over (or released)
// and must not be committed here. It is also the ownership check before a
// commit: a claim renewed is safe from takeover for a whole lease.
func (s *Store) Renew(ctx context.Context, claimIDs []int64) (held map[int64]bool, err error) {
	held = make(map[int64]bool, len(claimIDs))
	if len(claimIDs) == 0 {
		return held, nil
	}
	rows, err := s.cfg.DB.QueryContext(ctx, `
UPDATE raw_claims SET lease_until = now() + make_interval(secs => $3)
 WHERE claim_id = ANY($1) AND claimed_by = $2 AND NOT done
RETURNING claim_id`, pq.Array(claimIDs), s.cfg.Replica, s.cfg.Lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("renew claims: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("renew claims: %w", err)
		}
		held[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("renew claims: %w", err)
	}
	return held, nil
}

// Release deletes claims, so their documents are claimable again at once.
// It returns how many were still held.
func (s *Store) Release(ctx context.Context, claimIDs []int64) (int64, error) {
	if len(claimIDs) == 0 {
		return 0, nil
	}
	res, err := s.cfg.DB.ExecContext(ctx, `DELETE FROM raw_claims WHERE claim_id = ANY($1) AND claimed_by = $2`,
		pq.Array(claimIDs), s.cfg.Replica)
	if err != nil {
		return 0, fmt.Errorf("release claims: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Finish marks claims as done: their flip went through, or was refused
// because the document changed since the search. The rows keep their
// documents out of the searches for Hold (until the raw index shows the new
// version), refuse claims at the version they were made at (a search that
// has not seen the change) until Sweep deletes them after Keep, and let a
// newer version of the document be claimed at once, its stalls afresh.
func (s *Store) Finish(ctx context.Context, claimIDs []int64) error {
	if len(claimIDs) == 0 {
		return nil
	}
	_, err := s.cfg.DB.ExecContext(ctx, `
UPDATE raw_claims SET done = TRUE, lease_until = now() + make_interval(secs => $3)
 WHERE claim_id = ANY($1) AND claimed_by = $2`, pq.Array(claimIDs), s.cfg.Replica, s.cfg.Hold.Seconds())
	if err != nil {
		return fmt.Errorf("finish claims: %w", err)
	}
	return nil
}

// ReleaseAll deletes every claim of this replica: a restart with a stable
// CLASSIFIER_ID lets the documents of its previous run flow again now
// rather than after the lease.
func (s *Store) ReleaseAll(ctx context.Context) (int64, error) {
	res, err := s.cfg.DB.ExecContext(ctx, `DELETE FROM raw_claims WHERE claimed_by = $1 AND NOT done`, s.cfg.Replica)
	if err != nil {
		return 0, fmt.Errorf("release all claims: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Forget deletes the claims on documents of index made in another
// incarnation than uuid, or every claim on its documents when uuid is
// empty: the index was deleted, or deleted and created again (the poller
// saw its index.uuid change). Their documents are gone; a claim still in
// flight on one is lost (its owner's ownership check fails, so it commits
// nothing), and the new incarnation's documents are neither left out of
// the searches nor refused by the old rows' versions. It returns how many
// rows it deleted.
func (s *Store) Forget(ctx context.Context, index, uuid string) (int64, error) {
	res, err := s.cfg.DB.ExecContext(ctx, `DELETE FROM raw_claims WHERE raw_index = $1 AND ($2 = '' OR index_uuid <> $2)`,
		key(index), uuid)
	if err != nil {
		return 0, fmt.Errorf("forget claims of %s: %w", index, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Sweep deletes finished rows older than Keep, at most limit of them.
func (s *Store) Sweep(ctx context.Context, limit int) (int64, error) {
	res, err := s.cfg.DB.ExecContext(ctx, `
DELETE FROM raw_claims WHERE ctid IN (
  SELECT ctid FROM raw_claims WHERE done AND lease_until < now() - make_interval(secs => $2) LIMIT $1)`, limit, s.cfg.Keep.Seconds())
	if err != nil {
		return 0, fmt.Errorf("sweep claims: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Live returns, per index of indices, the ids of the documents with a live
// claim (held or finished within its hold), which a search for pending
// documents leaves out: they are being classified, or just were.
func (s *Store) Live(ctx context.Context, indices []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(indices) == 0 {
		return out, nil
	}
	rows, err := s.cfg.DB.QueryContext(ctx, `
SELECT raw_index, doc_id FROM raw_claims WHERE raw_index = ANY($1) AND lease_until >= now()`, pq.Array(indices))
	if err != nil {
		return nil, fmt.Errorf("live claims: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var idx, id string
		if err := rows.Scan(&idx, &id); err != nil {
			return nil, fmt.Errorf("live claims: %w", err)
		}
		out[idx] = append(out[idx], id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("live claims: %w", err)
	}
	return out, nil
}

// Processing returns the number of documents being classified (live,
// unfinished claims) per raw index: what operators see as processing.
func Processing(ctx context.Context, db *sql.DB) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, `
SELECT raw_index, count(*) FROM raw_claims WHERE NOT done AND lease_until >= now() GROUP BY raw_index`)
	if err != nil {
		return nil, fmt.Errorf("count processing: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var idx string
		var n int64
		if err := rows.Scan(&idx, &n); err != nil {
			return nil, fmt.Errorf("count processing: %w", err)
		}
		out[idx] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count processing: %w", err)
	}
	return out, nil
}

// ClaimDocs claims raw documents found by a search, at the versions they
// carry, and returns those won with their ClaimID set and Stalled set when
// their lease had expired without a commit maxStalls times (zero: never).
func (s *Store) ClaimDocs(ctx context.Context, docs []*domain.RawContent, maxStalls int) ([]*domain.RawContent, error) {
	in := make([]Doc, len(docs))
	byKey := make(map[Doc]*domain.RawContent, len(docs))
	for i, d := range docs {
		in[i] = Doc{Index: d.Index, IndexUUID: d.IndexUUID, ID: d.ID, SeqNo: d.SeqNo, PrimaryTerm: d.PrimaryTerm}
		byKey[Doc{Index: key(d.Index), IndexUUID: d.IndexUUID, ID: key(d.ID), SeqNo: d.SeqNo, PrimaryTerm: d.PrimaryTerm}] = d
	}
	won, err := s.Claim(ctx, in)
	if err != nil {
		return nil, err
	}
	out := make([]*domain.RawContent, 0, len(won))
	for _, c := range won {
		d := byKey[c.Doc]
		if d == nil {
			continue // cannot happen: a claim carries the version it was given
		}
		d.Lease, d.ClaimedBy = c.ClaimID, s.cfg.Replica
		d.Stalled = maxStalls > 0 && c.Stalls >= maxStalls
		out = append(out, d)
	}
	return out, nil
}

// ClaimIDs returns the claim ids of docs, skipping those without one.
func ClaimIDs(docs []*domain.RawContent) []int64 {
	out := make([]int64, 0, len(docs))
	for _, d := range docs {
		if d.Lease != 0 {
			out = append(out, d.Lease)
		}
	}
	return out
}
