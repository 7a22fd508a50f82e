package processor

import (
	"context"
	"fmt"

	"github.com/north-cloud/classifier/internal/dedup"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/republish"
)

// Hygiene decides, before a batch is written, which of its documents are
// news to subscribers: a duplicate of another document (package dedup) is
// marked with duplicate_of and, as its kind and the policy say, not
// published; a document whose outcome equals its last published one
// (package republish) is not published again, and one whose outcome
// changed is published with the next version.
type Hygiene struct {
	Duplicates *dedup.Store
	Outcomes   *republish.Store
}

// decide fills DuplicateOf, Version, ChangedFields and Publish on docs.
// Its reads and writes are idempotent for a document classified again: the
// same document gets the same verdict and, until its outbox row is
// recorded, the same version for the same outcome; another outcome gets the
// next version, since the first may be in the outbox already.
func (h *Hygiene) decide(ctx context.Context, docs []*domain.ClassifiedContent) error {
	if h == nil {
		for _, d := range docs {
			d.Publish, d.Version = true, max(d.Version, 1)
		}
		return nil
	}
	candidates := make([]dedup.Doc, len(docs))
	for i, d := range docs {
		candidates[i] = dedup.Doc{Key: rawKey(d), Source: d.SourceName, CanonicalURL: d.CanonicalURL, Fingerprint: d.Fingerprint}
	}
	verdicts, err := h.Duplicates.Check(ctx, candidates)
	if err != nil {
		return fmt.Errorf("check duplicates: %w", err)
	}
	items := make([]republish.Item, len(docs))
	for i, d := range docs {
		d.DuplicateOf = nil
		if v := verdicts[i]; v.Kind != dedup.None {
			d.DuplicateOf = &domain.DuplicateRef{Index: v.Of.Index, ID: v.Of.ID, Kind: string(v.Kind)}
		}
		items[i] = republish.Item{Key: rawKey(d), Outcome: outcomeOf(d)}
	}
	decisions, err := h.Outcomes.Plan(ctx, items)
	if err != nil {
		return fmt.Errorf("plan publications: %w", err)
	}
	var before []dedup.Doc
	reserve := make([]republish.Decision, len(docs))
	for i, d := range docs {
		d.Version, d.ChangedFields = decisions[i].Version, decisions[i].Changed
		d.Publish = verdicts[i].Publish && decisions[i].Publish
		reserve[i] = republish.Decision{Publish: d.Publish, Version: d.Version}
		if !verdicts[i].Publish && decisions[i].Version == 1 && decisions[i].Publish {
			d.Version = 0 // never published: no version yet
		}
		if verdicts[i].Publish && !decisions[i].Publish {
			before = append(before, candidates[i]) // its outcome was published already
		}
	}
	if err := h.Duplicates.Published(ctx, before); err != nil {
		return fmt.Errorf("check duplicates: %w", err)
	}
	// The versions to publish are reserved before the outbox rows exist, so
	// a retry with another outcome takes the next one (package republish).
	if err := h.Outcomes.Reserve(ctx, items, reserve); err != nil {
		return fmt.Errorf("plan publications: %w", err)
	}
	return nil
}

// superseded splits docs, about to be written to the outbox, into those
// still current and those another attempt decided a newer version of since
// (republish.Store.Superseded): those are not written.
func (h *Hygiene) superseded(ctx context.Context, docs []*domain.ClassifiedContent) (current, stale []*domain.ClassifiedContent, err error) {
	if h == nil || len(docs) == 0 {
		return docs, nil, nil
	}
	items := make([]republish.Item, len(docs))
	decisions := make([]republish.Decision, len(docs))
	for i, d := range docs {
		items[i] = republish.Item{Key: rawKey(d)}
		decisions[i] = republish.Decision{Publish: true, Version: d.Version}
	}
	newer, err := h.Outcomes.Superseded(ctx, items, decisions)
	if err != nil {
		return nil, nil, fmt.Errorf("check superseded publications: %w", err)
	}
	for i, d := range docs {
		if newer[i] {
			stale = append(stale, d)
		} else {
			current = append(current, d)
		}
	}
	return current, stale, nil
}

// record remembers the outcomes of the documents just inserted into the
// outbox, so the same outcome is not published again.
func (h *Hygiene) record(ctx context.Context, published []*domain.ClassifiedContent) error {
	if h == nil || len(published) == 0 {
		return nil
	}
	items := make([]republish.Item, len(published))
	decisions := make([]republish.Decision, len(published))
	for i, d := range published {
		items[i] = republish.Item{Key: rawKey(d), Outcome: outcomeOf(d)}
		decisions[i] = republish.Decision{Publish: true, Version: d.Version}
	}
	if err := h.Outcomes.Record(ctx, items, decisions); err != nil {
		return fmt.Errorf("record publications: %w", err)
	}
	// Their canonical URLs are theirs now: a document is held back as a URL
	// duplicate only behind one that was published (package dedup).
	urls := make([]dedup.Doc, len(published))
	for i, d := range published {
		urls[i] = dedup.Doc{Key: rawKey(d), CanonicalURL: d.CanonicalURL}
	}
	if err := h.Duplicates.Published(ctx, urls); err != nil {
		return fmt.Errorf("record publications: %w", err)
	}
	return nil
}

// Cleanup forgets, at most limit rows of each table at a time, the
// canonical URLs and fingerprints past their windows and the published
// outcomes (and version reservations) of documents the duplicate windows
// no longer remember, so published_outcomes lives as long as its
// documents' duplicate records. It returns how many rows it deleted.
func (h *Hygiene) Cleanup(ctx context.Context, limit int) (int64, error) {
	n, err := h.Duplicates.Cleanup(ctx, limit)
	if err != nil {
		return n, err
	}
	m, err := h.Outcomes.Cleanup(ctx, h.Duplicates.Retention(), limit)
	return n + m, err
}

// rawKey is a classified document's identity: its raw index and id.
func rawKey(d *domain.ClassifiedContent) domain.DocKey {
	return domain.DocKey{Index: d.RawIndex, ID: d.ID}
}

// outcomeOf is what subscribers are told about d.
func outcomeOf(d *domain.ClassifiedContent) republish.Outcome {
	o := republish.Outcome{
		ContentType: d.ContentType, Topics: d.Topics, PrimaryTopic: d.PrimaryTopic, QualityScore: d.QualityScore,
		IsCrimeRelated: d.IsCrimeRelated, Title: d.Title, URL: d.URL, CanonicalURL: d.CanonicalURL,
		TextHash: d.ContentHash,
	}
	if d.CrimeSubcategory != nil {
		o.CrimeSubcategory = *d.CrimeSubcategory
	}
	if d.DuplicateOf != nil {
		o.DuplicateOf = d.DuplicateOf.Index + "/" + d.DuplicateOf.ID
	}
	return o
}

func duplicateKind(d *domain.ClassifiedContent) string {
	if d.DuplicateOf == nil {
		return ""
	}
	return d.DuplicateOf.Kind
}

// heldBehindFailed splits written into the documents to flip and the URL
// duplicates held back behind a claimant of their own batch that failed
// (failed): package dedup holds a document back only behind an original
// that reached the subscribers or is committed with it, and that one was
// not. Those are decided again from scratch (requeueOrphans).
func heldBehindFailed(written, failed []Result) (flip, orphans []Result) {
	if len(failed) == 0 {
		return written, nil
	}
	gone := make(map[domain.DocKey]bool, len(failed))
	for _, r := range failed {
		gone[domain.DocKey{Index: r.Raw.Index, ID: r.Raw.ID}] = true
	}
	flip = written[:0:0]
	for _, r := range written {
		d := r.Doc
		if d != nil && !d.Publish && d.DuplicateOf != nil && d.DuplicateOf.Kind == string(dedup.URL) &&
			gone[domain.DocKey{Index: d.DuplicateOf.Index, ID: d.DuplicateOf.ID}] {
			orphans = append(orphans, r)
			continue
		}
		flip = append(flip, r)
	}
	return flip, orphans
}

// requeueClaimantFailed is the reason of requeueOrphans in logs and metrics.
const requeueClaimantFailed = "url_claimant_failed"
