// Package pipeline turns a raw document into a classified one: content type,
// quality, topics. It is pure computation: no I/O, safe for concurrent use.
package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/canonical"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/fingerprint"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/infrastructure/clock"
	"github.com/north-cloud/infrastructure/contentindex"
)

// ErrUnprocessable marks a document that no retry can fix: one the door
// (package admission) refuses, such as no URL, a URL that is not http(s), no
// text, an id with a NUL byte or over 255 characters, or a document over
// the size limit. It is failed with the reason, not retried.
var ErrUnprocessable = errors.New("unprocessable document")

// MaxAnalysedBytes bounds how much of a body is analysed, so a document of
// megabytes costs no more than a long article.
const MaxAnalysedBytes = 64 << 10

// TopicMatcher finds the topic rules a text matches; *rules.Engine and
// *rules.Shadow are both one.
type TopicMatcher interface {
	Match(title, body string) []rules.Match
}

// DocumentMatcher is a TopicMatcher that may answer each document with a
// different engine, by its identity (raw index and id): *rules.Shadow with a
// matcher rollout (CLASSIFIER_MATCHER_ROLLOUT_PERCENT). Classify uses
// MatchDoc when Topics is one.
type DocumentMatcher interface {
	MatchDoc(index, id, title, body string) []rules.Match
}

// Config wires the pipeline's collaborators.
type Config struct {
	// Topics matches topic rules. Required.
	Topics TopicMatcher
	// Reputation returns a source's reputation score (0..1). Defaults to a
	// constant 0.5.
	Reputation func(source string) float64
	// OnRuleMatch, when set, is told how long each rule match took, how many
	// rules were evaluated and how many matched (for metrics).
	OnRuleMatch func(d time.Duration, evaluated, matched int)
	// RuleCount returns the number of rules evaluated per match, for
	// OnRuleMatch.
	RuleCount func() int
	// Limits bounds what a raw document may carry (admission.Limits); a zero
	// field takes its default. Defaults to admission.DefaultLimits().
	Limits admission.Limits
	// Clock stamps classified_at. Defaults to the system clock.
	Clock clock.Clock
	// Canonical computes the canonical URL kept beside the URL, by which
	// the same article under another URL is recognised. Defaults to
	// canonical.New(canonical.Config{}) (the default tracking parameters).
	Canonical *canonical.Canonicalizer
	// CopyRawHTML copies the raw document's page (raw_html) into the
	// classified document (CLASSIFIER_COPY_RAW_HTML). The classified
	// document's contract has no such field and nothing downstream reads it,
	// so by default the page stays in the raw index only.
	CopyRawHTML bool
}

// Pipeline admits a raw document and runs the classification stages on it
// in order: content type, quality, topics (and the crime fields they imply),
// source reputation. It holds no state between documents, so one Pipeline
// serves every worker.
type Pipeline struct {
	cfg Config
}

// New returns a Pipeline after checking cfg.
func New(cfg Config) (*Pipeline, error) {
	if cfg.Topics == nil {
		return nil, errors.New("new pipeline: Topics is required")
	}
	if cfg.Reputation == nil {
		cfg.Reputation = func(string) float64 { return 0.5 }
	}
	if cfg.Canonical == nil {
		cfg.Canonical = canonical.New(canonical.Config{})
	}
	if err := cfg.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("new pipeline: limits: %w", err)
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	return &Pipeline{cfg: cfg}, nil
}

// Classify admits raw (admission.Admit, which normalizes its free-text
// fields in place) and classifies it. A refusal wraps both ErrUnprocessable
// and the *admission.RejectionError naming the field.
func (p *Pipeline) Classify(raw *domain.RawContent) (*domain.ClassifiedContent, error) {
	if err := admission.Admit(raw, p.cfg.Limits); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnprocessable, err)
	}
	// From here every string of raw is valid UTF-8 without NUL bytes and
	// within the limits, and so is everything copied from it below.
	text := bounded(raw.RawText)
	title := raw.Title
	// A social media or video platform page is classified from its
	// metadata: its text is a feed or a player, not an article.
	assessed := admission.AssessURL(raw.URL)
	if assessed.Strategy == admission.StrategyMetadataOnly {
		text = raw.MetaDescription
	}

	words := raw.WordCount
	if words <= 0 || assessed.Strategy == admission.StrategyMetadataOnly {
		words = len(strings.Fields(text))
	}
	published := parseDate(raw.PublishedDate)

	ct := detectContentType(raw.OGType, raw.URL, words, title != "", published != nil)
	quality, factors := scoreQuality(words, title, raw.MetaDescription, published != nil, text)
	start := time.Now()
	var matches []rules.Match
	if dm, ok := p.cfg.Topics.(DocumentMatcher); ok {
		matches = dm.MatchDoc(raw.Index, raw.ID, title, text)
	} else {
		matches = p.cfg.Topics.Match(title, text)
	}
	if p.cfg.OnRuleMatch != nil {
		evaluated := 0
		if p.cfg.RuleCount != nil {
			evaluated = p.cfg.RuleCount()
		}
		p.cfg.OnRuleMatch(time.Since(start), evaluated, len(matches))
	}

	// The door admitted an absolute http(s) URL; one the canonical form
	// still refuses (an odd host) is kept without one and is never a URL
	// duplicate.
	canonicalURL, _ := p.cfg.Canonical.URL(raw.URL)
	fp := fingerprint.Of(title, text)
	out := &domain.ClassifiedContent{
		ID:                    raw.ID,
		URL:                   raw.URL,
		CanonicalURL:          canonicalURL,
		Fingerprint:           fp,
		ContentHash:           fp.Exact,
		SourceName:            raw.SourceName,
		Title:                 title,
		RawText:               raw.RawText,
		Traceparent:           raw.Traceparent,
		OGType:                raw.OGType,
		MetaDescription:       raw.MetaDescription,
		PublishedDate:         published,
		CrawledAt:             raw.CrawledAt,
		WordCount:             words,
		ClassificationStatus:  contentindex.StatusClassified,
		ContentType:           ct.Type,
		ContentTypeConfidence: ct.Confidence,
		ContentTypeMethod:     ct.Method,
		QualityScore:          quality,
		QualityFactors:        factors,
		Topics:                []string{},
		TopicScores:           []domain.TopicScore{},
		SourceReputation:      p.cfg.Reputation(raw.SourceName),
		Confidence:            ct.Confidence,
		ClassifierVersion:     domain.Version,
		ClassifiedAt:          p.cfg.Clock.Now().UTC(),
		Index:                 contentindex.ClassifiedIndexFor(raw.Index),
		RawIndex:              raw.Index,
		ClaimID:               raw.ClaimID(),
		ProcessingStrategy:    string(assessed.Strategy),
		IsProcessable:         assessed.Processable,
		URLClass:              string(assessed.Class),
	}
	if p.cfg.CopyRawHTML {
		out.RawHTML = raw.RawHTML
	} // Matches come highest priority first, then best score: keep each
	// topic once, at its best score, in that order.
	for _, m := range matches {
		topic := m.Topic()
		if slices.Contains(out.Topics, topic) {
			continue
		}
		out.Topics = append(out.Topics, topic)
		out.TopicScores = append(out.TopicScores, domain.TopicScore{Topic: topic, Score: m.Score})
		if rules.IsCrimeSubcategory(topic) {
			out.IsCrimeRelated = true
			if out.CrimeSubcategory == nil {
				out.CrimeSubcategory = &topic
			}
		}
	}
	if len(out.TopicScores) > 0 {
		out.Confidence = (ct.Confidence + out.TopicScores[0].Score) / 2
	}
	return out, nil
}

// bounded returns at most MaxAnalysedBytes of s (admitted, so valid UTF-8),
// cut at a rune boundary.
func bounded(s string) string {
	if len(s) > MaxAnalysedBytes {
		cut := MaxAnalysedBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

var dateLayouts = []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02", time.RFC1123Z, time.RFC1123}

// parseDate accepts the layouts crawlers commonly send and returns nil for
// anything else: an unparsable date is missing metadata, not an error. So is
// a date whose UTC year is outside 1..9999 (such as 0000-01-01T00:00:00+01:00):
// encoding/json cannot write it, which would fail the whole bulk request.
func parseDate(s string) *time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC()
			if t.Year() < 1 || t.Year() > 9999 {
				return nil
			}
			return &t
		}
	}
	return nil
}
