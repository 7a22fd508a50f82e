// Package sweep finds the pending raw documents the classifier's door
// (admission.Admit) would refuse, and reports them per index and reason
// (the refused field) with a few sample ids. With Quarantine it does to
// each what the classifier would: a VALIDATION_ERROR dead letter with the
// reason, then the raw document marked failed with it, conditional on the
// version read, so a document claimed or changed since is left alone.
//
// A sweep is idempotent: a quarantined document is no longer pending, and
// recording its dead letter again changes nothing.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rawindex"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
)

// Defaults of Config.
const (
	PatternDefault = "*" + contentindex.RawSuffix
	SamplesDefault = 5
)

// Config configures a Sweeper.
type Config struct {
	// Raw holds the raw indices: the sweep reads and flips through it, so
	// its flips are bounded like the classifier's (CLASSIFIER_MAX_BULK_BYTES).
	// Required.
	Raw *rawindex.Store
	// Pattern selects the raw indices (names, wildcards, -exclusions).
	// Defaults to PatternDefault.
	Pattern string
	// Limits are the door's limits, as the classifier is configured.
	Limits admission.Limits
	// Quarantine dead-letters and fails the refused documents; without it
	// the sweep only reports.
	Quarantine bool
	// DeadLetters records the quarantined documents. Required with
	// Quarantine.
	DeadLetters *deadletter.Repository
	// Limit is the most pending documents read; 0 reads them all.
	Limit int
	// PageSize is the most documents read at once. Defaults to
	// rawindex.PageSizeDefault.
	PageSize int
	// Samples is how many ids each reason lists. Defaults to
	// SamplesDefault.
	Samples int
	// Progress, when set, is called after every page with the totals so
	// far.
	Progress func(Totals)
}

// Totals are the counts of a sweep, over all indices or of one.
type Totals struct {
	// Scanned counts the pending documents read.
	Scanned int64 `json:"scanned"`
	// Unprocessable counts those the door refuses.
	Unprocessable int64 `json:"unprocessable"`
	// Quarantined counts those dead-lettered and marked failed.
	Quarantined int64 `json:"quarantined"`
	// Skipped counts refused documents left alone because they changed
	// since they were read (claimed by a classifier, re-crawled).
	Skipped int64 `json:"skipped"`
	// FlipErrors counts refused documents Elasticsearch would not mark
	// failed (a write-blocked index); they stay pending and dead-lettered.
	FlipErrors int64 `json:"flip_errors"`
}

// Reason is one refused field of one index.
type Reason struct {
	// Field is the raw document field refused ("url", "raw_text",
	// "document" for the document as a whole).
	Field string `json:"field"`
	Count int64  `json:"count"`
	// Example is the first refusal's message.
	Example string `json:"example"`
	// Samples are the ids of the first documents refused for it.
	Samples []string `json:"samples"`
}

// Index is one raw index's part of a sweep.
type Index struct {
	Index string `json:"index"`
	Totals
	Reasons []Reason `json:"reasons"`
}

// Report is what a sweep found and did.
type Report struct {
	Totals
	// Indices are the raw indices with pending documents, by name.
	Indices []Index `json:"indices"`
	// Truncated is true when Limit stopped the sweep before the end.
	Truncated bool `json:"truncated"`
	// FirstFlipError is the first refusal of a status change, if any.
	FirstFlipError string `json:"first_flip_error,omitempty"`
}

// Sweeper runs sweeps.
type Sweeper struct {
	cfg Config
}

// New returns a Sweeper after checking cfg.
func New(cfg Config) (*Sweeper, error) {
	if cfg.Pattern == "" {
		cfg.Pattern = PatternDefault
	}
	cfg.Samples = config.PositiveOr(cfg.Samples, SamplesDefault)
	var errs []error
	if cfg.Raw == nil {
		errs = append(errs, errors.New("Raw is required"))
	}
	if cfg.Quarantine && cfg.DeadLetters == nil {
		errs = append(errs, errors.New("DeadLetters is required to quarantine"))
	}
	if cfg.Limit < 0 {
		errs = append(errs, fmt.Errorf("Limit must be 0 (no limit) or positive (got %d)", cfg.Limit))
	}
	if err := cfg.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new sweep: %w", err)
	}
	return &Sweeper{cfg: cfg}, nil
}

// Run sweeps the pending documents of the pattern's indices.
func (s *Sweeper) Run(ctx context.Context) (*Report, error) {
	report := &Report{}
	byIndex := map[string]*Index{}
	reasons := map[string]map[string]*Reason{}
	q := rawindex.ScanQuery{
		Indices:  s.cfg.Pattern,
		Statuses: []string{contentindex.StatusPending},
		PageSize: s.cfg.PageSize,
		// A previous sweep's flips are seen, so its documents are not
		// read again as pending.
		Refresh: true,
	}
	q.PageSize = config.PositiveOr(q.PageSize, rawindex.PageSizeDefault)
	if s.cfg.Limit > 0 {
		q.PageSize = min(q.PageSize, s.cfg.Limit)
	}
	err := s.cfg.Raw.Scan(ctx, q, func(ctx context.Context, docs []*domain.RawContent) (bool, error) {
		if rest := int64(s.cfg.Limit) - report.Scanned; s.cfg.Limit > 0 && int64(len(docs)) > rest {
			docs = docs[:rest]
		}
		var refused []refusal
		for _, raw := range docs {
			idx := byIndex[raw.Index]
			if idx == nil {
				idx = &Index{Index: raw.Index}
				byIndex[raw.Index], reasons[raw.Index] = idx, map[string]*Reason{}
			}
			idx.Scanned++
			report.Scanned++
			err := admission.Admit(raw, s.cfg.Limits)
			if err == nil {
				continue
			}
			field := "document"
			var rej *admission.RejectionError
			if errors.As(err, &rej) {
				field = rej.Field
			}
			// The message the classifier records for the same refusal.
			msg := fmt.Errorf("%w: %w", pipeline.ErrUnprocessable, err).Error()
			idx.Unprocessable++
			report.Unprocessable++
			r := reasons[raw.Index][field]
			if r == nil {
				r = &Reason{Field: field, Example: msg}
				reasons[raw.Index][field] = r
			}
			r.Count++
			if len(r.Samples) < s.cfg.Samples {
				r.Samples = append(r.Samples, raw.ID)
			}
			refused = append(refused, refusal{raw: raw, message: msg})
		}
		if s.cfg.Quarantine && len(refused) > 0 {
			if err := s.quarantine(ctx, refused, report, byIndex); err != nil {
				return false, err
			}
		}
		if s.cfg.Progress != nil {
			s.cfg.Progress(report.Totals)
		}
		if s.cfg.Limit > 0 && report.Scanned >= int64(s.cfg.Limit) {
			report.Truncated = true
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", s.cfg.Pattern, err)
	}
	for name, idx := range byIndex {
		for _, r := range reasons[name] {
			idx.Reasons = append(idx.Reasons, *r)
		}
		slices.SortFunc(idx.Reasons, func(a, b Reason) int {
			if a.Count != b.Count {
				return int(b.Count - a.Count)
			}
			return strings.Compare(a.Field, b.Field)
		})
		report.Indices = append(report.Indices, *idx)
	}
	slices.SortFunc(report.Indices, func(a, b Index) int { return strings.Compare(a.Index, b.Index) })
	return report, nil
}

type refusal struct {
	raw     *domain.RawContent
	message string
}

// quarantine does what the classifier's committer does with refused
// documents: the dead letters first, then the conditional status flip.
func (s *Sweeper) quarantine(ctx context.Context, refused []refusal, report *Report, byIndex map[string]*Index) error {
	failures := make([]domain.DeadLetterEntry, len(refused))
	changes := make([]rawindex.Change, len(refused))
	for i, r := range refused {
		failures[i] = domain.DeadLetterEntry{ContentID: r.raw.ID, SourceName: r.raw.SourceName, IndexName: r.raw.Index,
			ErrorCode: domain.ErrorCodeValidation, ErrorMessage: r.message}
		changes[i] = rawindex.Change{Raw: r.raw, Status: contentindex.StatusFailed,
			Reason: string(domain.ErrorCodeValidation) + ": " + r.message}
	}
	if _, err := s.cfg.DeadLetters.EnqueueBatch(ctx, failures); err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	items, err := s.cfg.Raw.Flip(ctx, changes)
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	for i, item := range items {
		idx := byIndex[refused[i].raw.Index]
		switch {
		case item.Err == nil:
			idx.Quarantined++
			report.Quarantined++
		case rawindex.Changed(item.Err):
			idx.Skipped++
			report.Skipped++
		default:
			idx.FlipErrors++
			report.FlipErrors++
			if report.FirstFlipError == "" {
				report.FirstFlipError = fmt.Sprintf("%s/%s: %v", refused[i].raw.Index, refused[i].raw.ID, item.Err)
			}
		}
	}
	return nil
}
