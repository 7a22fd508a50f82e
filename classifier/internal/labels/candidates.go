package labels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

// Candidate reasons: why a document is offered for a label.
const (
	ReasonNoTopic       = "no_topic"
	ReasonLowConfidence = "low_confidence"
	ReasonDisputed      = "disputed"
)

// Finder defaults.
const (
	ClassifiedPatternDefault = "*" + contentindex.ClassifiedSuffix
	LowConfidenceDefault     = 0.6
	SnippetBytes             = 300
)

// FinderConfig configures a Finder.
type FinderConfig struct {
	// ES holds the classified indices. Required.
	ES *esclient.Client
	// Pattern selects the classified indices. Defaults to
	// ClassifiedPatternDefault.
	Pattern string
	// LowConfidence: a primary topic below this probability is worth a
	// label. Defaults to LowConfidenceDefault.
	LowConfidence float64
}

// Finder reads the classified documents worth a label.
type Finder struct {
	cfg FinderConfig
}

// NewFinder returns a Finder after checking cfg.
func NewFinder(cfg FinderConfig) (*Finder, error) {
	if cfg.ES == nil {
		return nil, errors.New("new label finder: ES is required")
	}
	if cfg.Pattern == "" {
		cfg.Pattern = ClassifiedPatternDefault
	}
	if cfg.LowConfidence == 0 {
		cfg.LowConfidence = LowConfidenceDefault
	}
	return &Finder{cfg: cfg}, nil
}

// Candidate is a classified document worth a label.
type Candidate struct {
	Index        string   `json:"index"` // the raw index
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Snippet      string   `json:"snippet"`
	PrimaryTopic string   `json:"primary_topic"`
	Confidence   float64  `json:"confidence"`
	Topics       []string `json:"topics"`
	Reason       string   `json:"reason"`
}

// classified is the part of a classified document a candidate needs.
type classified struct {
	Title        string   `json:"title"`
	RawText      string   `json:"raw_text"`
	PrimaryTopic string   `json:"primary_topic"`
	Confidence   float64  `json:"primary_topic_confidence"`
	Topics       []string `json:"topics"`
	Disputed     bool     `json:"topic_disputed"`
}

// Candidates returns up to limit documents worth a label, the least
// certain first (no topic, then by confidence), leaving out those
// labelled reports as labelled.
func (f *Finder) Candidates(ctx context.Context, limit int, labelled func(ctx context.Context, indices, ids []string) (map[[2]string]bool, error)) ([]Candidate, error) {
	// Read more than asked, as some are labelled already.
	body, err := json.Marshal(map[string]any{
		"size":    limit * 4,
		"_source": []string{"title", "raw_text", "primary_topic", "primary_topic_confidence", "topics", "topic_disputed"},
		"query": map[string]any{"bool": map[string]any{"minimum_should_match": 1, "should": []any{
			// No topic: a decision that found nothing (documents classified
			// before decisions were recorded have topics, or a confidence).
			map[string]any{"bool": map[string]any{"must_not": []any{
				map[string]any{"exists": map[string]any{"field": "primary_topic"}},
				map[string]any{"exists": map[string]any{"field": "topics"}},
			}}},
			map[string]any{"range": map[string]any{"primary_topic_confidence": map[string]any{"lt": f.cfg.LowConfidence}}},
			map[string]any{"term": map[string]any{"topic_disputed": true}},
		}}},
		"sort": []any{
			map[string]any{"primary_topic_confidence": map[string]any{"order": "asc", "missing": "_first", "unmapped_type": "float"}},
			map[string]any{"classified_at": map[string]any{"order": "desc", "unmapped_type": "date"}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("label candidates: %w", err)
	}
	es := f.cfg.ES
	res, err := es.Search(es.Search.WithContext(ctx), es.Search.WithIndex(f.cfg.Pattern),
		es.Search.WithBody(bytes.NewReader(body)), es.Search.WithIgnoreUnavailable(true),
		es.Search.WithAllowNoIndices(true), es.Search.WithExpandWildcards("open"))
	if err := esclient.CheckResponse("label candidates", res, err); err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var parsed struct {
		Hits struct {
			Hits []struct {
				Index  string     `json:"_index"`
				ID     string     `json:"_id"`
				Source classified `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return nil, fmt.Errorf("label candidates: decode: %w", err)
	}
	out := []Candidate{}
	var indices, ids []string
	for _, h := range parsed.Hits.Hits {
		c := Candidate{Index: RawIndexOf(h.Index), ID: h.ID, Title: h.Source.Title, Snippet: snippet(h.Source.RawText),
			PrimaryTopic: h.Source.PrimaryTopic, Confidence: h.Source.Confidence, Topics: h.Source.Topics}
		if c.Topics == nil {
			c.Topics = []string{}
		}
		switch {
		case c.PrimaryTopic == "":
			c.Reason = ReasonNoTopic
		case c.Confidence < f.cfg.LowConfidence:
			c.Reason = ReasonLowConfidence
		default:
			c.Reason = ReasonDisputed
		}
		out = append(out, c)
		indices, ids = append(indices, c.Index), append(ids, c.ID)
	}
	done, err := labelled(ctx, indices, ids)
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for _, c := range out {
		if !done[[2]string{c.Index, c.ID}] && len(kept) < limit {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// Document is what a label keeps of a classified document.
type Document struct {
	Title, Text  string
	PrimaryTopic string
	Confidence   float64
}

// Document reads the classified twin of raw document (rawIndex, id);
// ErrNotFound when there is none.
func (f *Finder) Document(ctx context.Context, rawIndex, id string) (Document, error) {
	if contentindex.TypeOf(rawIndex) != contentindex.TypeRaw {
		return Document{}, fmt.Errorf("label document: %q is not a raw index: %w", rawIndex, ErrInvalid)
	}
	es := f.cfg.ES
	res, err := es.Get(contentindex.ClassifiedIndexFor(rawIndex), id, es.Get.WithContext(ctx),
		es.Get.WithSourceIncludes("title", "raw_text", "primary_topic", "primary_topic_confidence"))
	if err := esclient.CheckResponse("label document", res, err); err != nil {
		var re *esclient.ResponseError
		switch {
		case esclient.IsNotFound(err):
			return Document{}, fmt.Errorf("label document %s/%s: %w", rawIndex, id, ErrNotFound)
		case errors.As(err, &re) && re.Status == http.StatusBadRequest:
			// An index name Elasticsearch refuses (upper case, a space).
			return Document{}, fmt.Errorf("label document %s/%s: %w: %w", rawIndex, id, ErrInvalid, err)
		}
		return Document{}, err
	}
	defer res.Body.Close()
	var parsed struct {
		Source classified `json:"_source"`
	}
	if err := json.NewDecoder(res.Body).Decode(&parsed); err != nil {
		return Document{}, fmt.Errorf("label document: decode: %w", err)
	}
	s := parsed.Source
	return Document{Title: s.Title, Text: s.RawText, PrimaryTopic: s.PrimaryTopic, Confidence: s.Confidence}, nil
}

// ClassifiedPattern turns the poller's raw-index pattern
// (CLASSIFIER_INDEX_PATTERN: names, wildcards, -exclusions, comma-separated)
// into the pattern of their classified twins, so candidates come from the
// indices this classifier classifies. "" is ClassifiedPatternDefault.
func ClassifiedPattern(rawPattern string) string {
	var out []string
	for _, part := range strings.Split(rawPattern, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.HasSuffix(part, contentindex.RawSuffix):
			out = append(out, strings.TrimSuffix(part, contentindex.RawSuffix)+contentindex.ClassifiedSuffix)
		case strings.HasSuffix(part, "*"):
			out = append(out, part+contentindex.ClassifiedSuffix)
		}
	}
	if len(out) == 0 {
		return ClassifiedPatternDefault
	}
	return strings.Join(out, ",")
}

// RawIndexOf is the raw index of a classified index.
func RawIndexOf(classifiedIndex string) string {
	return strings.TrimSuffix(classifiedIndex, contentindex.ClassifiedSuffix) + contentindex.RawSuffix
}

// snippet is the first SnippetBytes of text, cut at a rune boundary.
func snippet(text string) string {
	if len(text) <= SnippetBytes {
		return text
	}
	cut := SnippetBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}
