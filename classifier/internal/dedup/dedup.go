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
	"database/sql"
	"fmt"
	"strings"
	"time"

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

func keyLess(a, b domain.DocKey) bool {
	if a.Index != b.Index {
		return a.Index < b.Index
	}
	return a.ID < b.ID
}
