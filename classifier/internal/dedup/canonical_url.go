package dedup

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/lib/pq"

	"github.com/north-cloud/classifier/internal/domain"
)

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
