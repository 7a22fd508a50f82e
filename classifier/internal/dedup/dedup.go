// Package dedup decides whether a classified document duplicates one seen
// before: the same canonical URL (the same article reached another way) or
// the same or nearly the same text under another URL (wire copy
// republished by several outlets, a re-crawl with small edits).
//
// A URL duplicate is not published again. A content duplicate is
// published flagged with duplicate_of, or skipped, as the ContentPolicy
// says. Both are recorded on the classified document and counted.
//
// A canonical URL belongs only to a document that was published. The
// document that will be published first at a URL claims it while it is
// decided, provisionally (a lease of ClaimLease against other replicas);
// Published confirms the claim once its outbox row is written. A skipped
// copy never claims a URL, and a provisional claim whose document never got
// published (it failed for good) lapses with its lease. A document whose
// URL is held only provisionally by a document of another batch is
// published flagged with duplicate_of (kind url): it is held back only
// behind an original that reached the subscribers, or one committed with it
// in the same batch.
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
	// ClaimLease is how long a provisional claim on a canonical URL (its
	// document not published yet) holds it. Defaults to DefaultClaimLease.
	ClaimLease time.Duration
}

// Defaults of Config.
const (
	DefaultURLWindow     = 7 * 24 * time.Hour
	DefaultContentWindow = 72 * time.Hour
	DefaultMaxCandidates = 20
	DefaultClaimLease    = 15 * time.Minute
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
	if cfg.ClaimLease <= 0 {
		cfg.ClaimLease = DefaultClaimLease
	}
	return &Store{db: db, cfg: cfg}
}

// Check returns a verdict per document, in order, and records the
// documents' fingerprints for those that follow, and provisional claims on
// the canonical URLs of those that will be published (Published confirms
// them).
func (s *Store) Check(ctx context.Context, docs []Doc) ([]Verdict, error) {
	verdicts := make([]Verdict, len(docs))
	for i := range verdicts {
		verdicts[i].Publish = true
	}
	if len(docs) == 0 {
		return verdicts, nil
	}
	free, err := s.checkURLs(ctx, docs, verdicts)
	if err != nil {
		return nil, err
	}
	if err := s.checkContent(ctx, docs, verdicts); err != nil {
		return nil, err
	}
	if err := s.claimFree(ctx, docs, verdicts, free); err != nil {
		return nil, err
	}
	// A URL duplicate is never an original: its text is not recorded.
	var originals []Doc
	for i, d := range docs {
		if verdicts[i].Kind != URL {
			originals = append(originals, d)
		}
	}
	return verdicts, s.record(ctx, originals)
}

// holder is the document holding a canonical URL, and whether it was
// published (its claim confirmed) or is still being decided.
type holder struct {
	key       domain.DocKey
	published bool
}

// urlDuplicate is the verdict on a document whose URL h holds: not
// published behind a published original; behind one not published yet, as
// the document's other verdict says (flagged with duplicate_of).
func urlDuplicate(h holder, publish bool) Verdict {
	return Verdict{Kind: URL, Of: h.key, Publish: publish && !h.published}
}

// checkURLs gives the documents whose canonical URL another document holds
// their URL verdict, and returns the batch's documents by free URL (held
// by no one, or by no one else).
func (s *Store) checkURLs(ctx context.Context, docs []Doc, verdicts []Verdict) (map[string][]int, error) {
	byURL := map[string][]int{}
	for i, d := range docs {
		if d.CanonicalURL != "" {
			byURL[d.CanonicalURL] = append(byURL[d.CanonicalURL], i)
		}
	}
	if len(byURL) == 0 {
		return nil, nil
	}
	holders, err := s.holders(ctx, keys(byURL))
	if err != nil {
		return nil, err
	}
	for u, idx := range byURL {
		h, ok := holders[u]
		if !ok {
			continue
		}
		for _, i := range idx {
			if docs[i].Key != h.key {
				verdicts[i] = urlDuplicate(h, true)
			}
		}
		delete(byURL, u)
		// The holder's own URL stays with it; were it in the batch with
		// others, they are its duplicates already.
	}
	return byURL, nil
}

// claimFree claims each free URL for the batch's document that will be
// published at it, the one with the smallest key (a skipped copy never
// claims a URL), and makes the batch's other documents at that URL its URL
// duplicates, held back: they are committed with it. Claims are race-free across replicas: the statement takes a
// URL only when it is free or expired, and a lost race reads the winner.
func (s *Store) claimFree(ctx context.Context, docs []Doc, verdicts []Verdict, free map[string][]int) error {
	var claim []Doc
	for _, idx := range free {
		first := -1
		for _, i := range idx {
			if verdicts[i].Publish && (first < 0 || keyLess(docs[i].Key, docs[first].Key)) {
				first = i
			}
		}
		if first >= 0 {
			claim = append(claim, docs[first])
		}
	}
	holders, err := s.claimURLs(ctx, claim)
	if err != nil {
		return err
	}
	for u, idx := range free {
		h, ok := holders[u]
		if !ok {
			continue // nothing at the URL is published: no one holds it
		}
		ours := false
		for _, i := range idx {
			ours = ours || docs[i].Key == h.key
		}
		// Behind the batch's own claimant, held back as behind a published
		// one; behind another replica's, as urlDuplicate says.
		h.published = h.published || ours
		for _, i := range idx {
			if docs[i].Key != h.key {
				verdicts[i] = urlDuplicate(h, verdicts[i].Publish)
			}
		}
	}
	return nil
}

// holds is the condition of a canonical_urls row (alias c) that still
// holds its URL: a published holder inside the window ($w), a provisional
// one inside its lease ($l).
const holds = `((c.published AND c.first_seen_at >= NOW() - %[1]s::interval) OR (NOT c.published AND c.first_seen_at >= NOW() - %[2]s::interval))`

// holders reads the documents holding urls.
func (s *Store) holders(ctx context.Context, urls []string) (map[string]holder, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT c.canonical_url, c.index_name, c.content_id, c.published FROM canonical_urls c
		 WHERE c.url_hash = ANY($1::bytea[]) AND `+fmt.Sprintf(holds, "$2", "$3"),
		pq.Array(hashes(urls)), interval(s.cfg.URLWindow), interval(s.cfg.ClaimLease))
	if err != nil {
		return nil, fmt.Errorf("read canonical urls: %w", err)
	}
	defer rows.Close()
	out := make(map[string]holder, len(urls))
	for rows.Next() {
		var u string
		var h holder
		if err := rows.Scan(&u, &h.key.Index, &h.key.ID, &h.published); err != nil {
			return nil, fmt.Errorf("read canonical urls: %w", err)
		}
		out[u] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read canonical urls: %w", err)
	}
	return out, nil
}

// claimURLs claims each document's canonical URL for it, provisionally,
// when the URL is free or its holder lapsed, and returns the holders (the
// claimant, or the winner of a race with another replica).
func (s *Store) claimURLs(ctx context.Context, claim []Doc) (map[string]holder, error) {
	holders := map[string]holder{}
	if len(claim) == 0 {
		return holders, nil
	}
	urls := make([]string, len(claim))
	indices, ids, sources := make([]string, len(claim)), make([]string, len(claim)), make([]string, len(claim))
	for i, d := range claim {
		urls[i], indices[i], ids[i], sources[i] = d.CanonicalURL, d.Key.Index, d.Key.ID, d.Source
	}
	rows, err := s.db.QueryContext(ctx, `
		INSERT INTO canonical_urls AS c (url_hash, canonical_url, index_name, content_id, source_name, published)
		SELECT *, FALSE FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], $5::text[])
		ON CONFLICT (url_hash) DO UPDATE
		   SET index_name = EXCLUDED.index_name, content_id = EXCLUDED.content_id,
		       source_name = EXCLUDED.source_name, first_seen_at = NOW(), published = FALSE
		 WHERE NOT `+fmt.Sprintf(holds, "$6", "$7")+`
		RETURNING canonical_url, index_name, content_id`,
		pq.Array(hashes(urls)), pq.Array(urls), pq.Array(indices), pq.Array(ids), pq.Array(sources),
		interval(s.cfg.URLWindow), interval(s.cfg.ClaimLease))
	if err != nil {
		return nil, fmt.Errorf("claim canonical urls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		var h holder
		if err := rows.Scan(&u, &h.key.Index, &h.key.ID); err != nil {
			return nil, fmt.Errorf("claim canonical urls: %w", err)
		}
		holders[u] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim canonical urls: %w", err)
	}
	var lost []string
	for _, u := range urls {
		if _, ok := holders[u]; !ok {
			lost = append(lost, u)
		}
	}
	if len(lost) == 0 {
		return holders, nil
	}
	winners, err := s.holders(ctx, lost) // another replica claimed them first
	if err != nil {
		return nil, err
	}
	for u, h := range winners {
		holders[u] = h
	}
	for _, u := range lost {
		if _, ok := holders[u]; !ok {
			return nil, fmt.Errorf("claim canonical urls: %w: no holder for %q", errMissing, u)
		}
	}
	return holders, nil
}

// Published confirms the URL claims of docs, whose outbox rows are written:
// each URL now belongs to its document for the window. A claim another
// document took over meanwhile (the lease lapsed) is left to it.
func (s *Store) Published(ctx context.Context, docs []Doc) error {
	var hs [][]byte
	var indices, ids []string
	for _, d := range docs {
		if d.CanonicalURL == "" {
			continue
		}
		hs = append(hs, hashes([]string{d.CanonicalURL})[0])
		indices, ids = append(indices, d.Key.Index), append(ids, d.Key.ID)
	}
	if len(hs) == 0 {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `
		UPDATE canonical_urls c SET published = TRUE, first_seen_at = NOW()
		  FROM unnest($1::bytea[], $2::text[], $3::text[]) AS t(h, idx, id)
		 WHERE c.url_hash = t.h AND c.index_name = t.idx AND c.content_id = t.id AND NOT c.published`,
		pq.Array(hs), pq.Array(indices), pq.Array(ids))
	if err != nil {
		return fmt.Errorf("confirm canonical urls: %w", err)
	}
	return nil
}

func keys(m map[string][]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func hashes(urls []string) [][]byte {
	out := make([][]byte, len(urls))
	for i, u := range urls {
		h := sha256.Sum256([]byte(u))
		out[i] = h[:]
	}
	return out
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
// with the texts seen before it.
//
// "Before" is one order for every check, so that a document classified
// again gets the verdict it got the first time: by first_seen_at, then by
// raw index and id. A document new to the store comes after every stored
// one; documents new in the same batch are ordered by their keys (they
// are recorded with the same first_seen_at). The original of a duplicate
// is the earliest near text before it.
func (s *Store) checkContent(ctx context.Context, docs []Doc, verdicts []Verdict) error {
	var open []int // the documents that are not URL duplicates
	for i := range docs {
		if verdicts[i].Kind == None {
			open = append(open, i)
		}
	}
	near, isNew, err := s.nearest(ctx, docs, open)
	if err != nil {
		return err
	}
	for _, i := range open {
		of, ok := near[i]
		if !ok && isNew[i] {
			of, ok = earliestNewNear(docs, verdicts, isNew, i)
		}
		if ok {
			verdicts[i] = Verdict{Kind: Content, Of: of, Publish: s.cfg.ContentPolicy == Flag}
		}
	}
	return nil
}

// firstCandidates is how many candidates nearest reads per document
// before it reads up to MaxCandidates.
const firstCandidates = 2

// nearest returns, for the documents docs[i] for i in open, the earliest
// stored text near each (absent: none) and whether it is new to the store.
// It reads each document's first firstCandidates candidates, and only for
// a document none of whose full first round was near, its candidates up to
// MaxCandidates: the answer reading MaxCandidates at once gives, for a
// fraction of the rows when the first candidate decides (a flood of
// copies) or there is none (most news).
func (s *Store) nearest(ctx context.Context, docs []Doc, open []int) (map[int]domain.DocKey, []bool, error) {
	near := map[int]domain.DocKey{}
	isNew := make([]bool, len(docs))
	if len(open) == 0 {
		return near, isNew, nil
	}
	subset := func(idx []int) []Doc {
		out := make([]Doc, len(idx))
		for j, i := range idx {
			out[j] = docs[i]
		}
		return out
	}
	first := min(firstCandidates, s.cfg.MaxCandidates)
	cands, fresh, err := s.candidates(ctx, subset(open), first)
	if err != nil {
		return nil, nil, err
	}
	var again []int
	for j, i := range open {
		isNew[i] = fresh[j]
		if of, ok := earliestNear(docs[i], cands[j]); ok {
			near[i] = of
		} else if len(cands[j]) == first && first < s.cfg.MaxCandidates {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return near, isNew, nil
	}
	cands, _, err = s.candidates(ctx, subset(again), s.cfg.MaxCandidates)
	if err != nil {
		return nil, nil, err
	}
	for j, i := range again {
		if of, ok := earliestNear(docs[i], cands[j]); ok {
			near[i] = of
		}
	}
	return near, isNew, nil
}

// earliestNear returns the first of the stored candidates (they come in
// order) whose text is near d's.
func earliestNear(d Doc, cands []candidate) (domain.DocKey, bool) {
	for _, c := range cands {
		stored := fingerprint.Fingerprint{Exact: hex.EncodeToString(c.exact), Sim: uint64(c.sim.Int64), Sketch: c.sketch}
		if c.sim.Valid {
			stored.Words = fingerprint.MinWords // compared as a long text
		}
		if fingerprint.Near(stored, d.Fingerprint) {
			return c.key, true
		}
	}
	return domain.DocKey{}, false
}

// earliestNewNear returns, among the batch's other new documents with a
// smaller key that are not URL duplicates, the smallest whose text is near
// docs[i]'s.
func earliestNewNear(docs []Doc, verdicts []Verdict, isNew []bool, i int) (domain.DocKey, bool) {
	var best domain.DocKey
	found := false
	for j, o := range docs {
		if j == i || !isNew[j] || verdicts[j].Kind == URL || !keyLess(o.Key, docs[i].Key) || (found && !keyLess(o.Key, best)) {
			continue
		}
		if fingerprint.Near(o.Fingerprint, docs[i].Fingerprint) {
			best, found = o.Key, true
		}
	}
	return best, found
}

func keyLess(a, b domain.DocKey) bool {
	if a.Index != b.Index {
		return a.Index < b.Index
	}
	return a.ID < b.ID
}

// candidatesQuery is the statement of candidates. Index and id compare
// in the C collation, as Go compares strings; the bound (b) is the
// document's own place in that order.
//
// Each lookup is a range of whole index keys, from (value, window start)
// to (value, the document's place), read in key order: not "value = v",
// which the planner may serve with a bitmap scan and a sort of every row
// holding v when its statistics think v rare (before the first ANALYZE,
// or when a flood of boilerplate has just made it common). A range of
// unknown width makes the ordered index scan, which stops after the
// LIMIT, the cheap plan with or without statistics.
const candidatesQuery = `
		SELECT q.ord, own.first_seen_at IS NULL, f.index_name, f.content_id, f.exact_hash, f.simhash, f.sketch, f.first_seen_at
		  FROM unnest($1::bigint[], $2::bytea[], $3::text[], $4::text[], $9::bool[]) AS q(ord, exact, idx, id, has_sketch)
		  LEFT JOIN content_fingerprints own ON own.index_name = q.idx AND own.content_id = q.id
		  CROSS JOIN LATERAL (SELECT COALESCE(own.first_seen_at, 'infinity') AS seen, NOW() - $7::interval AS since) b
		  LEFT JOIN LATERAL (
		       SELECT DISTINCT m.first_seen_at, m.index_name, m.content_id
		         FROM (
		              (SELECT e.first_seen_at, e.index_name COLLATE "C" AS index_name, e.content_id COLLATE "C" AS content_id
		                 FROM content_fingerprints e
		                WHERE (e.exact_hash, e.first_seen_at, e.index_name COLLATE "C", e.content_id COLLATE "C") >= (q.exact, b.since, '', '')
		                  AND (e.exact_hash, e.first_seen_at, e.index_name COLLATE "C", e.content_id COLLATE "C") < (q.exact, b.seen, q.idx COLLATE "C", q.id COLLATE "C")
		                ORDER BY e.exact_hash, e.first_seen_at, e.index_name COLLATE "C", e.content_id COLLATE "C"
		                LIMIT $8)
		              UNION ALL
		              SELECT p.first_seen_at, p.index_name, p.content_id
		                FROM unnest(($5::bigint[])[q.ord*$6+1 : q.ord*$6+$6]) AS v(value)
		                CROSS JOIN LATERAL (
		                     SELECT p.first_seen_at, p.index_name COLLATE "C" AS index_name, p.content_id COLLATE "C" AS content_id
		                       FROM content_sketch_postings p
		                      WHERE q.has_sketch
		                        AND (p.value, p.first_seen_at, p.index_name COLLATE "C", p.content_id COLLATE "C") >= (v.value, b.since, '', '')
		                        AND (p.value, p.first_seen_at, p.index_name COLLATE "C", p.content_id COLLATE "C") < (v.value, b.seen, q.idx COLLATE "C", q.id COLLATE "C")
		                      ORDER BY p.value, p.first_seen_at, p.index_name COLLATE "C", p.content_id COLLATE "C"
		                      LIMIT $8) p
		              ) m
		        ORDER BY m.first_seen_at, m.index_name, m.content_id
		        LIMIT $8) k ON TRUE
		  LEFT JOIN content_fingerprints f ON f.index_name = k.index_name COLLATE "default" AND f.content_id = k.content_id COLLATE "default"
		 ORDER BY q.ord, k.first_seen_at, k.index_name, k.content_id`

// candidateArgs are candidatesQuery's parameters for docs.
func (s *Store) candidateArgs(docs []Doc, limit int) []any {
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
	return []any{pq.Array(ords), pq.Array(exacts), pq.Array(indices), pq.Array(ids), pq.Array(sketch),
		fingerprint.SketchSize, interval(s.cfg.ContentWindow), limit, pq.Array(hasSketch)}
}

// candidates reads, in one statement for the batch, each document's own
// stored row (none: it is new) and the first limit stored
// fingerprints before it, in order, that share its exact hash or a value of
// its sketch inside the window.
//
// The cost is bounded whatever the corpus: the exact hash and each sketch
// value are read from B-trees in the candidates' order
// (idx_content_fingerprints_exact, idx_content_sketch_postings_order),
// each for at most limit entries, and the first limit of their union are
// the first limit of all matches. A value shared by
// every stored text (boilerplate) costs as much as a rare one.
func (s *Store) candidates(ctx context.Context, docs []Doc, limit int) ([][]candidate, []bool, error) {
	rows, err := s.db.QueryContext(ctx, candidatesQuery, s.candidateArgs(docs, limit)...)
	if err != nil {
		return nil, nil, fmt.Errorf("read near fingerprints: %w", err)
	}
	defer rows.Close()
	out := make([][]candidate, len(docs))
	isNew := make([]bool, len(docs))
	for rows.Next() {
		var c candidate
		var fresh bool
		var index, id sql.NullString
		var seenAt sql.NullTime
		if err := rows.Scan(&c.doc, &fresh, &index, &id, &c.exact, &c.sim, (*pq.Int64Array)(&c.sketch), &seenAt); err != nil {
			return nil, nil, fmt.Errorf("read near fingerprints: %w", err)
		}
		isNew[c.doc] = fresh
		if !index.Valid {
			continue // no candidate
		}
		c.key, c.seenAt = domain.DocKey{Index: index.String, ID: id.String}, seenAt.Time
		out[c.doc] = append(out[c.doc], c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read near fingerprints: %w", err)
	}
	return out, isNew, nil
}

// record stores the fingerprints of docs; a document classified again
// keeps its first_seen_at, and its row (with its postings, which a trigger
// keeps in step) is rewritten only when its text changed.
func (s *Store) record(ctx context.Context, docs []Doc) error {
	if len(docs) == 0 {
		return nil
	}
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
		       source_name = EXCLUDED.source_name
		 WHERE (content_fingerprints.exact_hash, content_fingerprints.simhash, content_fingerprints.sketch, content_fingerprints.source_name)
		       IS DISTINCT FROM (EXCLUDED.exact_hash, EXCLUDED.simhash, EXCLUDED.sketch, EXCLUDED.source_name)`,
		pq.Array(indices), pq.Array(ids), pq.Array(sources), pq.Array(exacts), pq.GenericArray{A: sims}, pq.Array(sketches))
	if err != nil {
		return fmt.Errorf("record fingerprints: %w", err)
	}
	return nil
}

// Retention is how long the store remembers a document: the longer of its
// windows.
func (s *Store) Retention() time.Duration { return max(s.cfg.URLWindow, s.cfg.ContentWindow) }

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
