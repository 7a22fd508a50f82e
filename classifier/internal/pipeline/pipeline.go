// Package pipeline turns a raw document into a classified one: content type,
// quality, topics. It is pure computation: no I/O, safe for concurrent use.
package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/north-cloud/classifier/internal/admission"
	"github.com/north-cloud/classifier/internal/canonical"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/fingerprint"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
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

// TopicExplainer is a TopicMatcher that also reports the rules that found a
// keyword without passing their threshold (rules.Match.Matched false), which
// the topic decision weighs as evidence: *rules.Engine and *rules.Shadow.
type TopicExplainer interface {
	Explain(title, body string) []rules.Match
}

// KeyedExplainer explains a rules.Text, whose keys the topic model shares
// (rules.Engine).
type KeyedExplainer interface {
	ExplainKeyed(t *rules.Text) []rules.Match
}

// KeyedDocumentExplainer is ExplainDoc of a rules.Text (rules.Shadow).
type KeyedDocumentExplainer interface {
	ExplainDocKeyed(index, id string, t *rules.Text) []rules.Match
}

// DocumentExplainer is Explain by document identity, for a matcher rollout
// (*rules.Shadow).
type DocumentExplainer interface {
	ExplainDoc(index, id, title, body string) []rules.Match
}

// ModelFunc returns the topic model that decides the document (index, id)
// and one to score beside it in shadow (nil: none): the active model and a
// candidate, swapped for the documents of the candidate's rollout
// (*modelstore.Models.For). A nil deciding model means the rules decide
// alone.
type ModelFunc func(index, id string) (decides, shadow *topicmodel.Scorer)

// Config wires the pipeline's collaborators.
type Config struct {
	// Topics matches topic rules. Required.
	Topics TopicMatcher
	// Model returns the topic model that decides each document's primary
	// section. Defaults to the shipped lexicon (topicmodel.DefaultLexicon),
	// compiled once.
	Model ModelFunc
	// Decide tunes the topic decision (topicmodel.DecideConfig); the zero
	// value takes the defaults.
	Decide topicmodel.DecideConfig
	// OnModelShadow, when set, is told each document's decision and the
	// shadow model's decision of it, when Model returned a shadow model.
	OnModelShadow func(decided, shadow topicmodel.Decision)
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
	if cfg.Model == nil {
		def, err := DefaultModel()
		if err != nil {
			return nil, fmt.Errorf("new pipeline: %w", err)
		}
		cfg.Model = func(string, string) (*topicmodel.Scorer, *topicmodel.Scorer) { return def, nil }
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
	decision := p.Decide(raw.Index, raw.ID, title, text)

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
		ReprocessTask:         raw.ReprocessTask,
		ProcessingStrategy:    string(assessed.Strategy),
		IsProcessable:         assessed.Processable,
		URLClass:              string(assessed.Class),
	}
	if p.cfg.CopyRawHTML {
		out.RawHTML = raw.RawHTML
	}
	// The decision's topics, the primary first, each once with its
	// probability.
	for _, t := range decision.Topics {
		out.Topics = append(out.Topics, t.Topic)
		out.TopicScores = append(out.TopicScores, domain.TopicScore{Topic: t.Topic, Score: t.Score})
	}
	out.PrimaryTopic, out.PrimaryTopicConfidence = decision.Primary, decision.Confidence
	out.TopicDisputed = decision.Disputed
	if decision.Crime {
		sub := decision.Subcategory
		out.IsCrimeRelated, out.CrimeSubcategory = true, &sub
	}
	if decision.Primary != "" {
		out.Confidence = (ct.Confidence + decision.Confidence) / 2
	}
	return out, nil
}

// Decide decides the topics of a document's title and (analysed) body: the
// rules' explanation and the model's probabilities, weighed by
// topicmodel.Decide. The document's identity picks the engine and model of
// a rollout.
func (p *Pipeline) Decide(index, id, title, body string) topicmodel.Decision {
	start := time.Now()
	text := rules.NewText(title, body) // keyed once for the rules and the models
	explained := p.explain(index, id, text)
	if p.cfg.OnRuleMatch != nil {
		evaluated, matched := 0, 0
		if p.cfg.RuleCount != nil {
			evaluated = p.cfg.RuleCount()
		}
		for _, m := range explained {
			if m.Matched {
				matched++
			}
		}
		p.cfg.OnRuleMatch(time.Since(start), evaluated, matched)
	}
	model, shadow := p.cfg.Model(index, id)
	d := p.decideWith(model, text, explained)
	if shadow != nil && p.cfg.OnModelShadow != nil {
		p.cfg.OnModelShadow(d, p.decideWith(shadow, text, explained))
	}
	return d
}

// ExplainDecision decides the topics of a title and body as Classify does
// (the body bounded as the pipeline bounds it) and says why: for the
// playground.
func (p *Pipeline) ExplainDecision(index, id, title, body string) topicmodel.Explanation {
	body = bounded(body)
	model, _ := p.cfg.Model(index, id)
	return topicmodel.Explain(model, title, body, p.explain(index, id, rules.NewText(title, body)), p.cfg.Decide)
}

func (p *Pipeline) decideWith(model *topicmodel.Scorer, text *rules.Text, explained []rules.Match) topicmodel.Decision {
	var scores topicmodel.Scores
	if model != nil {
		scores = model.ScoreKeyed(text)
	}
	return topicmodel.Decide(model, scores, explained, p.cfg.Decide)
}

// explain returns every rule that found a keyword in the document, Matched
// telling which passed their threshold. A matcher that cannot explain
// reports its matches only.
func (p *Pipeline) explain(index, id string, t *rules.Text) []rules.Match {
	switch m := p.cfg.Topics.(type) {
	case KeyedDocumentExplainer:
		return m.ExplainDocKeyed(index, id, t)
	case DocumentExplainer:
		return m.ExplainDoc(index, id, t.Title, t.Body)
	case KeyedExplainer:
		return m.ExplainKeyed(t)
	case TopicExplainer:
		return m.Explain(t.Title, t.Body)
	case DocumentMatcher:
		return m.MatchDoc(index, id, t.Title, t.Body)
	}
	return p.cfg.Topics.Match(t.Title, t.Body)
}

// DefaultModel is the shipped default topic model, compiled with
// topicmodel.MatcherDefault.
func DefaultModel() (*topicmodel.Scorer, error) {
	m, err := topicmodel.DefaultLexicon()
	if err != nil {
		return nil, err
	}
	return topicmodel.Compile(m, topicmodel.MatcherDefault)
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
