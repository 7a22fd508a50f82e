package dedup

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/fingerprint"
)

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
