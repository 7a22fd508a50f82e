// Package dedup decides whether a classified document duplicates one seen
// before: the same canonical URL (the same article reached another way) or
// the same or nearly the same text under another URL (wire copy
// republished by several outlets, a re-crawl with small edits).
//
// A URL duplicate is not published again. A content duplicate is
// published flagged with duplicate_of, or skipped, as the ContentPolicy
// says. Both are recorded on the classified document and counted.
//
// The decision is idempotent: classifying the same document again (a crash
// before the commit point, a reprocess) gives the same verdict, because a
// document is never a duplicate of itself and the original it points to is
// the first holder of the URL or the first near text.
package dedup

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/fingerprint"
)

// Kind says why a document is a duplicate.
type Kind string

// The kinds of duplicates.
const (
	// None: the document is an original.
	None Kind = ""
	// URL: another document holds the same canonical URL.
	URL Kind = "url"
	// Content: another document has the same or nearly the same text.
	Content Kind = "content"
)

// Policy says what happens to a content duplicate.
type Policy string

// The content duplicate policies.
const (
	// Flag publishes it with duplicate_of, so subscribers choose.
	Flag Policy = "flag"
	// Skip does not publish it.
	Skip Policy = "skip"
)

// ParsePolicy reads a policy setting.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(strings.ToLower(strings.TrimSpace(s))); p {
	case Flag, Skip:
		return p, nil
	default:
		return "", fmt.Errorf("duplicate content policy %q: want %q or %q", s, Flag, Skip)
	}
}

// Config configures a Store.
type Config struct {
	// URLWindow is how long a canonical URL stays with its first document.
	URLWindow time.Duration
	// ContentWindow is how long a text is compared with later ones.
	ContentWindow time.Duration
	// ContentPolicy says whether a content duplicate is published.
	ContentPolicy Policy
	// MaxCandidates bounds the near-text candidates read per document.
	MaxCandidates int
}

// Defaults of Config.
const (
	DefaultURLWindow     = 7 * 24 * time.Hour
	DefaultContentWindow = 72 * time.Hour
	DefaultMaxCandidates = 20
)

// Doc is what the store needs of a classified document.
type Doc struct {
	Key          domain.DocKey
	Source       string
	CanonicalURL string
	Fingerprint  fingerprint.Fingerprint
}

// Verdict is the store's decision on one document.
type Verdict struct {
	Kind Kind
	// Of is the original's identity when Kind is not None.
	Of domain.DocKey
	// Publish says whether the document goes to subscribers.
	Publish bool
}

// Store keeps canonical URLs and fingerprints in the classifier's database.
type Store struct {
	db  *sql.DB
	cfg Config
}

// New returns a Store; zero fields of cfg take their defaults.
func New(db *sql.DB, cfg Config) *Store {
	if cfg.URLWindow <= 0 {
		cfg.URLWindow = DefaultURLWindow
	}
	if cfg.ContentWindow <= 0 {
		cfg.ContentWindow = DefaultContentWindow
	}
	if cfg.ContentPolicy == "" {
		cfg.ContentPolicy = Flag
	}
	if cfg.MaxCandidates <= 0 {
		cfg.MaxCandidates = DefaultMaxCandidates
	}
	return &Store{db: db, cfg: cfg}
}

// Check returns a verdict per document, in order, and records the
// documents' URLs and fingerprints for those that follow.
func (s *Store) Check(ctx context.Context, docs []Doc) ([]Verdict, error) {
	verdicts := make([]Verdict, len(docs))
	for i := range verdicts {
		verdicts[i].Publish = true
	}
	if len(docs) == 0 {
		return verdicts, nil
	}
	if err := s.checkURLs(ctx, docs, verdicts); err != nil {
		return nil, err
	}
	if err := s.checkContent(ctx, docs, verdicts); err != nil {
		return nil, err
	}
	return verdicts, nil
}

// checkURLs claims every canonical URL for its document. A URL already
// held, inside the window, by another document makes this one a URL
// duplicate of the holder. The first of several documents of a batch with
// one URL claims it for all of them.
func (s *Store) checkURLs(ctx context.Context, docs []Doc, verdicts []Verdict) error {
	first := make(map[string]int, len(docs)) // canonical URL -> first doc in the batch
	var hashes [][]byte
	var urls, indices, ids, sources []string
	for i, d := range docs {
		if d.CanonicalURL == "" {
			continue
		}
		if j, ok := first[d.CanonicalURL]; ok {
			if docs[j].Key != d.Key {
				verdicts[i] = Verdict{Kind: URL, Of: docs[j].Key}
			}
			continue
		}
		first[d.CanonicalURL] = i
		h := sha256.Sum256([]byte(d.CanonicalURL))
		hashes = append(hashes, h[:])
		urls, indices, ids, sources = append(urls, d.CanonicalURL), append(indices, d.Key.Index), append(ids, d.Key.ID), append(sources, d.Source)
	}
	if len(urls) == 0 {
		return nil
	}
	// The holder after the statement: this document when it claimed the
	// URL (new, expired, or its own), otherwise the row as it stands.
	rows, err := s.db.QueryContext(ctx, `
		WITH claimed AS (
			INSERT INTO canonical_urls AS c (url_hash, canonical_url, index_name, content_id, source_name)
			SELECT * FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], $5::text[])
			ON CONFLICT (url_hash) DO UPDATE
			   SET index_name = EXCLUDED.index_name, content_id = EXCLUDED.content_id,
			       source_name = EXCLUDED.source_name,
			       first_seen_at = CASE WHEN c.index_name = EXCLUDED.index_name AND c.content_id = EXCLUDED.content_id
			                            THEN c.first_seen_at ELSE NOW() END
			 WHERE c.first_seen_at < NOW() - $6::interval
			    OR (c.index_name = EXCLUDED.index_name AND c.content_id = EXCLUDED.content_id)
			RETURNING canonical_url, index_name, content_id)
		SELECT canonical_url, index_name, content_id FROM claimed
		UNION ALL
		SELECT u.canonical_url, u.index_name, u.content_id
		  FROM canonical_urls u
		 WHERE u.url_hash = ANY($1::bytea[])
		   AND u.canonical_url NOT IN (SELECT canonical_url FROM claimed)`,
		pq.Array(hashes), pq.Array(urls), pq.Array(indices), pq.Array(ids), pq.Array(sources), interval(s.cfg.URLWindow))
	if err != nil {
		return fmt.Errorf("check canonical urls: %w", err)
	}
	defer rows.Close()
	holders := make(map[string]domain.DocKey, len(urls))
	for rows.Next() {
		var u string
		var k domain.DocKey
		if err := rows.Scan(&u, &k.Index, &k.ID); err != nil {
			return fmt.Errorf("check canonical urls: %w", err)
		}
		holders[u] = k
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check canonical urls: %w", err)
	}
	for i, d := range docs {
		if d.CanonicalURL == "" || verdicts[i].Kind != None {
			continue
		}
		holder, ok := holders[d.CanonicalURL]
		if !ok {
			return fmt.Errorf("check canonical urls: %w: no holder for %q", errMissing, d.CanonicalURL)
		}
		if holder != d.Key {
			verdicts[i] = Verdict{Kind: URL, Of: holder}
		}
	}
	for i := range docs {
		if verdicts[i].Kind == URL {
			verdicts[i].Publish = false
		}
	}
	return nil
}

var errMissing = errors.New("statement returned no row")

// candidate is a stored fingerprint near a document of the batch.
type candidate struct {
	doc    int
	key    domain.DocKey
	exact  []byte
	sim    sql.NullInt64
	sketch []int64
	seenAt time.Time
}

// checkContent compares each document that is not already a URL duplicate
// with the stored fingerprints inside the window and with the documents
// before it in the batch, then records the batch's fingerprints.
func (s *Store) checkContent(ctx context.Context, docs []Doc, verdicts []Verdict) error {
	cands, err := s.candidates(ctx, docs)
	if err != nil {
		return err
	}
	for i, d := range docs {
		if verdicts[i].Kind != None {
			continue
		}
		if of, ok := earliestNear(d, cands[i]); ok {
			verdicts[i] = Verdict{Kind: Content, Of: of, Publish: s.cfg.ContentPolicy == Flag}
			continue
		}
		for j := range i {
			if docs[j].Key != d.Key && fingerprint.Near(docs[j].Fingerprint, d.Fingerprint) {
				verdicts[i] = Verdict{Kind: Content, Of: docs[j].Key, Publish: s.cfg.ContentPolicy == Flag}
				break
			}
		}
	}
	return s.record(ctx, docs)
}

func earliestNear(d Doc, cands []candidate) (domain.DocKey, bool) {
	var best *candidate
	for i := range cands {
		c := &cands[i]
		stored := fingerprint.Fingerprint{Exact: hex.EncodeToString(c.exact), Sim: uint64(c.sim.Int64), Sketch: c.sketch}
		if c.sim.Valid {
			stored.Words = fingerprint.MinWords // compared as a long text
		}
		if fingerprint.Near(stored, d.Fingerprint) && (best == nil || c.seenAt.Before(best.seenAt)) {
			best = c
		}
	}
	if best == nil {
		return domain.DocKey{}, false
	}
	return best.key, true
}

// candidates reads, in one statement for the batch, the stored
// fingerprints that share a document's exact hash or a value of its
// sketch, inside the window, other than the document itself.
func (s *Store) candidates(ctx context.Context, docs []Doc) ([][]candidate, error) {
	ords := make([]int64, len(docs))
	hasSketch := make([]bool, len(docs))
	exacts := make([][]byte, len(docs))
	indices, ids := make([]string, len(docs)), make([]string, len(docs))
	sketch := make([]int64, 0, len(docs)*fingerprint.SketchSize)
	for i, d := range docs {
		ords[i] = int64(i)
		hasSketch[i] = len(d.Fingerprint.Sketch) > 0
		exacts[i] = exactBytes(d.Fingerprint.Exact)
		indices[i], ids[i] = d.Key.Index, d.Key.ID
		// Every document gets SketchSize slots (a short text's are unused).
		sk := make([]int64, fingerprint.SketchSize)
		copy(sk, d.Fingerprint.Sketch)
		sketch = append(sketch, sk...)
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT q.ord, f.index_name, f.content_id, f.exact_hash, f.simhash, f.sketch, f.first_seen_at
		  FROM unnest($1::bigint[], $2::bytea[], $3::text[], $4::text[], $9::bool[]) AS q(ord, exact, idx, id, has_sketch)
		  CROSS JOIN LATERAL (
		       SELECT index_name, content_id, exact_hash, simhash, sketch, first_seen_at
		         FROM content_fingerprints f
		        WHERE (f.exact_hash = q.exact
		               OR (q.has_sketch AND f.sketch && ($5::bigint[])[q.ord*$6+1 : q.ord*$6+$6]))
		          AND f.first_seen_at >= NOW() - $7::interval
		          AND NOT (f.index_name = q.idx AND f.content_id = q.id)
		        ORDER BY f.first_seen_at
		        LIMIT $8) f`,
		pq.Array(ords), pq.Array(exacts), pq.Array(indices), pq.Array(ids), pq.Array(sketch),
		fingerprint.SketchSize, interval(s.cfg.ContentWindow), s.cfg.MaxCandidates, pq.Array(hasSketch))
	if err != nil {
		return nil, fmt.Errorf("read near fingerprints: %w", err)
	}
	defer rows.Close()
	out := make([][]candidate, len(docs))
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.doc, &c.key.Index, &c.key.ID, &c.exact, &c.sim, (*pq.Int64Array)(&c.sketch), &c.seenAt); err != nil {
			return nil, fmt.Errorf("read near fingerprints: %w", err)
		}
		out[c.doc] = append(out[c.doc], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read near fingerprints: %w", err)
	}
	return out, nil
}

// record stores the batch's fingerprints; a document classified again
// keeps its first_seen_at.
func (s *Store) record(ctx context.Context, docs []Doc) error {
	seen := make(map[domain.DocKey]bool, len(docs))
	var indices, ids, sources, sketches []string
	var exacts [][]byte
	var sims []sql.NullInt64
	for _, d := range docs {
		if seen[d.Key] {
			continue
		}
		seen[d.Key] = true
		indices, ids, sources = append(indices, d.Key.Index), append(ids, d.Key.ID), append(sources, d.Source)
		exacts = append(exacts, exactBytes(d.Fingerprint.Exact))
		sims = append(sims, sql.NullInt64{Int64: int64(d.Fingerprint.Sim), Valid: d.Fingerprint.HasSim()})
		sketches = append(sketches, sketchLiteral(d.Fingerprint.Sketch))
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO content_fingerprints (index_name, content_id, source_name, exact_hash, simhash, sketch)
		SELECT idx, id, src, exact, sim, sk::bigint[]
		  FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[], $6::text[]) AS t(idx, id, src, exact, sim, sk)
		ON CONFLICT (index_name, content_id) DO UPDATE
		   SET exact_hash = EXCLUDED.exact_hash, simhash = EXCLUDED.simhash, sketch = EXCLUDED.sketch,
		       source_name = EXCLUDED.source_name`,
		pq.Array(indices), pq.Array(ids), pq.Array(sources), pq.Array(exacts), pq.GenericArray{A: sims}, pq.Array(sketches))
	if err != nil {
		return fmt.Errorf("record fingerprints: %w", err)
	}
	return nil
}

// Cleanup deletes URLs and fingerprints older than their windows, at most
// limit rows of each, and returns how many it deleted.
func (s *Store) Cleanup(ctx context.Context, limit int) (int64, error) {
	var total int64
	for _, q := range []struct {
		table  string
		window time.Duration
	}{
		{"canonical_urls", s.cfg.URLWindow},
		{"content_fingerprints", s.cfg.ContentWindow},
	} {
		res, err := s.db.ExecContext(ctx, `DELETE FROM `+q.table+` WHERE ctid IN (
			SELECT ctid FROM `+q.table+` WHERE first_seen_at < NOW() - $1::interval LIMIT $2)`,
			interval(q.window), limit)
		if err != nil {
			return total, fmt.Errorf("clean up %s: %w", q.table, err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}

func interval(d time.Duration) string { return fmt.Sprintf("%d milliseconds", d.Milliseconds()) }

// exactBytes is the hash's bytes; a malformed hash (never made by
// fingerprint.Of) gives nil, which matches nothing.
func exactBytes(hexHash string) []byte {
	b, err := hex.DecodeString(hexHash)
	if err != nil {
		return nil
	}
	return b
}

func sketchLiteral(sk []int64) string {
	parts := make([]string, len(sk))
	for i, v := range sk {
		parts[i] = fmt.Sprint(v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
