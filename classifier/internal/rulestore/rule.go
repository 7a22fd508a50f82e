// Package rulestore keeps the classifier's topic rules in Postgres (table
// classification_rules, migration 002) and hot-reloads them into the rule
// engine of every running replica (Watcher).
//
// The repository validates every rule before it is written, so the engine
// never refuses a rule set that came through it; a rule edited by hand in
// psql that the engine refuses is logged and counted by the Watcher, and the
// engine keeps its previous rules.
package rulestore

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/north-cloud/classifier/internal/rules"
)

// Limits enforced by Validate. They keep one rule small enough to show,
// edit and match cheaply, and bound what a single API call can add to the
// automaton.
const (
	// MaxNameLength is the longest rule name, in characters.
	MaxNameLength = 100
	// MaxTopicLength is the longest topic, in characters.
	MaxTopicLength = 64
	// MaxKeywords is the most keywords one rule may hold.
	MaxKeywords = 500
	// MaxKeywordLength is the longest keyword, in characters.
	MaxKeywordLength = 100
	// MinPriority and MaxPriority bound Priority.
	MinPriority = -1000
	MaxPriority = 1000
	// MinConfidenceDefault is the min_confidence of a rule created without
	// one: with about 25 keywords it asks for three distinct keywords.
	MinConfidenceDefault = 0.3
)

// topicPattern is a snake_case identifier: topics end up in Elasticsearch
// documents, Redis channel names and dashboard filters.
var topicPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Rule is a stored topic rule.
type Rule struct {
	ID            int64    `json:"id"`
	Name          string   `json:"name"`
	Topic         string   `json:"topic"`
	Keywords      []string `json:"keywords"`
	MinConfidence float64  `json:"min_confidence"`
	Priority      int      `json:"priority"`
	Enabled       bool     `json:"enabled"`
	// MinKeywords, when above zero, is the number of distinct keywords the
	// rule must find to match (it replaces min_confidence as the threshold
	// under the engine's default scoring); 0 keeps the spec's threshold.
	MinKeywords int `json:"min_keywords"`
	// Effect is what the rule does to its topic once it passes its
	// threshold (rules.Effect): support (the default), exclude (vetoes the
	// topic; the topic crime vetoes every crime subcategory) or override
	// (makes the topic primary, unless an exclude rule vetoed it).
	Effect rules.Effect `json:"effect"`
	// Threshold names the one threshold that decides the rule under the
	// live engine's scoring (rules.Rule.Threshold): "min_keywords" or
	// "min_confidence". It is derived, never stored: the rule API fills it
	// in (WithThreshold).
	Threshold string `json:"threshold,omitempty"`
	// Seed names the migration that inserted the rule ("005_default_rules"),
	// empty for rules created through the API.
	Seed      string    `json:"seed,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// WithThreshold returns r with Threshold set for the engine's scoring.
func (r Rule) WithThreshold(scoring rules.Scoring) Rule {
	er := r.EngineRule()
	r.Threshold = er.Threshold(scoring)
	return r
}

// EngineRule converts r for rules.NewEngine and Engine.Update.
func (r Rule) EngineRule() rules.Rule {
	return rules.Rule{
		ID:            r.ID,
		Name:          r.Name,
		Topic:         r.Topic,
		Keywords:      r.Keywords,
		MinConfidence: r.MinConfidence,
		Priority:      r.Priority,
		Enabled:       r.Enabled,
		MinKeywords:   r.MinKeywords,
		Effect:        r.Effect,
	}
}

// Input is what Create writes and Update replaces: every editable field.
type Input struct {
	Name          string
	Topic         string
	Keywords      []string
	MinConfidence float64
	Priority      int
	Enabled       bool
	// MinKeywords is the rule's min_keywords; nil creates the rule with 0
	// and leaves a rule's current value alone on Update, so a client that
	// does not know the field never resets it.
	MinKeywords *int
	// Effect is the rule's effect; nil creates the rule as a support rule
	// and leaves a rule's current effect alone on Update: a client that does
	// not know the field never turns an exclude rule into one that supports
	// the topic it vetoed.
	Effect *rules.Effect
}

// Filter selects rules in List. Zero values select everything.
type Filter struct {
	// Topic, when not empty, keeps rules of that topic only.
	Topic string
	// Enabled, when not nil, keeps enabled (true) or disabled (false) rules.
	Enabled *bool
}

// ErrNotFound is returned for a rule id that does not exist.
var ErrNotFound = errors.New("rule not found")

// ErrConflict is returned when a rule's name is already taken.
var ErrConflict = errors.New("rule name already exists")

// ErrInvalid is wrapped by every validation error; errors.Is(err, ErrInvalid)
// means the caller's input is at fault (HTTP 400).
var ErrInvalid = errors.New("invalid rule")

// ErrUnavailable wraps errors that mean the database could not be reached
// or did not answer in time (HTTP 503), as opposed to a query that failed.
var ErrUnavailable = errors.New("rule database unavailable")

// FieldError is one problem with one field of an Input.
type FieldError struct {
	// Field is the JSON name of the field, with an index for list items
	// ("keywords[3]").
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError lists every problem found in an Input. It matches
// ErrInvalid under errors.Is.
type ValidationError struct {
	Problems []FieldError
}

// Error lists the problems as "invalid rule: field: message; ...".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Message
	}
	return ErrInvalid.Error() + ": " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// maxReportedProblems bounds the error message of a rule with hundreds of
// bad keywords.
const maxReportedProblems = 10

// Validate checks in and returns it cleaned up (name, topic and keywords
// trimmed), or a *ValidationError naming each offending field. The topic
// crime is checked against the effect when in has one: Create gives a nil
// effect its default first, Update the rule's current one. Keywords are
// compared after rules.Normalize, the engine's own normalization, so
// "Break-in" and "break in" are duplicates and "!!!" is empty.
func Validate(in Input) (Input, error) {
	var problems []FieldError
	add := func(field, format string, args ...any) {
		problems = append(problems, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}

	in.Name = strings.TrimSpace(in.Name)
	switch n := utf8.RuneCountInString(in.Name); {
	case n == 0:
		add("name", "is required")
	case n > MaxNameLength:
		add("name", "must be at most %d characters (got %d)", MaxNameLength, n)
	case !utf8.ValidString(in.Name) || strings.IndexByte(in.Name, 0) >= 0:
		add("name", "must be valid UTF-8 without NUL characters")
	}

	in.Topic = strings.TrimSpace(in.Topic)
	switch n := len(in.Topic); {
	case n == 0:
		add("topic", "is required")
	case n > MaxTopicLength:
		add("topic", "must be at most %d characters (got %d)", MaxTopicLength, n)
	case !topicPattern.MatchString(in.Topic):
		add("topic", "must be snake_case: a lowercase letter, then lowercase letters, digits or underscores (got %q)", in.Topic)
	}

	if in.Effect != nil {
		if e, err := rules.ParseEffect(string(*in.Effect)); err != nil || *in.Effect == "" {
			add("effect", "must be one of %s, %s or %s (got %q)", rules.EffectSupport, rules.EffectExclude, rules.EffectOverride, string(*in.Effect))
		} else if p := topicEffectProblem(in.Topic, e); p != "" {
			add("topic", "%s", p)
		}
	}

	if math.IsNaN(in.MinConfidence) || in.MinConfidence < 0 || in.MinConfidence > 1 {
		add("min_confidence", "must be between 0 and 1 (got %v)", in.MinConfidence)
	}
	if in.MinKeywords != nil {
		if n := *in.MinKeywords; n < 0 || n > MaxKeywords || (len(in.Keywords) > 0 && n > len(in.Keywords)) {
			add("min_keywords", "must be between 0 and the number of keywords (%d) (got %d)", len(in.Keywords), n)
		}
	}
	if in.Priority < MinPriority || in.Priority > MaxPriority {
		add("priority", "must be between %d and %d (got %d)", MinPriority, MaxPriority, in.Priority)
	}

	switch {
	case len(in.Keywords) == 0:
		add("keywords", "at least one keyword is required")
	case len(in.Keywords) > MaxKeywords:
		add("keywords", "at most %d keywords are allowed (got %d)", MaxKeywords, len(in.Keywords))
	default:
		cleaned := make([]string, len(in.Keywords))
		seen := make(map[string]int, len(in.Keywords))
		for i, kw := range in.Keywords {
			kw = strings.TrimSpace(kw)
			cleaned[i] = kw
			field := fmt.Sprintf("keywords[%d]", i)
			if !utf8.ValidString(kw) || strings.IndexByte(kw, 0) >= 0 {
				add(field, "must be valid UTF-8 without NUL characters")
				continue
			}
			if n := utf8.RuneCountInString(kw); n > MaxKeywordLength {
				add(field, "must be at most %d characters (got %d)", MaxKeywordLength, n)
				continue
			}
			norm := rules.Normalize(kw)
			if len(norm) > MaxKeywordBytes {
				add(field, "is %d bytes once normalized, at most %d are allowed (some characters expand, such as U+FDFA to 33 bytes)", len(norm), MaxKeywordBytes)
				continue
			}
			if norm == "" {
				if kw == "" {
					add(field, "is empty")
				} else {
					add(field, "%q has no letters or digits", kw)
				}
				continue
			}
			if j, dup := seen[norm]; dup {
				add(field, "%q duplicates keywords[%d] %q (both match %q)", kw, j, cleaned[j], norm)
				continue
			}
			seen[norm] = i
		}
		in.Keywords = cleaned
	}

	if len(problems) == 0 {
		return in, nil
	}
	if len(problems) > maxReportedProblems {
		more := len(problems) - maxReportedProblems
		problems = append(problems[:maxReportedProblems], FieldError{Field: "keywords", Message: fmt.Sprintf("and %d more problems", more)})
	}
	return in, &ValidationError{Problems: problems}
}

// topicEffectProblem says why a rule of topic cannot have effect, "" when
// it can: the topic crime stands for the whole crime family, which only an
// exclude rule can name (a support or override rule names the subcategory
// it is about).
func topicEffectProblem(topic string, effect rules.Effect) string {
	if topic != rules.CrimeFamily || effect == rules.EffectExclude {
		return ""
	}
	return fmt.Sprintf("%q names the whole crime family and is allowed only with effect %s (got %s); name a crime subcategory (violent_crime, property_crime, drug_crime, organized_crime, criminal_justice) instead",
		rules.CrimeFamily, rules.EffectExclude, effect)
}
