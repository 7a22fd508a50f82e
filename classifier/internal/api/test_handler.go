package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/httpserver"
)

// testRequest is the body of POST /rules/test: either title and body (at
// least one), matched as the pipeline matches a document (no phrase spans
// the two), or text alone.
type testRequest struct {
	Title *string `json:"title"`
	Body  *string `json:"body"`
	Text  *string `json:"text"`
}

// RuleMatch is one matching rule in the POST /rules/test response.
type RuleMatch struct {
	RuleID        int64   `json:"rule_id"`
	RuleName      string  `json:"rule_name"`
	Topic         string  `json:"topic"`
	Priority      int     `json:"priority"`
	MinConfidence float64 `json:"min_confidence"`
	// Effect is what the rule does to its topic (rules.Effect): an exclude
	// rule's match vetoes the topic instead of adding it.
	Effect   rules.Effect `json:"effect"`
	Score    float64      `json:"score"`
	Coverage float64      `json:"coverage"`
	// Hits is the number of distinct keywords found (the engine counts
	// presence, not repetitions); it equals UniqueMatches.
	Hits          int `json:"hits"`
	UniqueMatches int `json:"unique_matches"`
	// MatchedKeywords are the keywords found, as the rule spells them.
	MatchedKeywords []string `json:"matched_keywords"`
	// Highlights are where each matched keyword occurs in the posted text.
	Highlights []Highlight `json:"highlights"`
}

// RuleExplanation is one rule that found at least one keyword in the posted
// text, whether it matched or not, with the figures that decided it: an
// operator sees why "economy" alone did not make an article Business and how
// many keywords it lacked.
type RuleExplanation struct {
	RuleID   int64        `json:"rule_id"`
	RuleName string       `json:"rule_name"`
	Topic    string       `json:"topic"`
	Priority int          `json:"priority"`
	Effect   rules.Effect `json:"effect"`
	// Matched reports whether the rule passed its threshold (it is then in
	// matches too).
	Matched bool `json:"matched"`
	// Score is the spec's score (0.5*min(1, log1p(found)/2.5) +
	// 0.5*found/keywords); MinConfidence the rule's threshold on it.
	Score         float64 `json:"score"`
	MinConfidence float64 `json:"min_confidence"`
	// MinKeywords is the rule's min_keywords (0: none).
	MinKeywords int `json:"min_keywords"`
	// Threshold names what decides the match under the engine's scoring:
	// "min_keywords" or "min_confidence".
	Threshold string `json:"threshold"`
	// KeywordsFound are the rule's keywords found, as the rule spells them;
	// Keywords is the number of distinct keywords of the rule;
	// KeywordsNeeded how many distinct keywords it must find to match
	// (Keywords+1 when none suffice); KeywordsMissing how many more it
	// needed (0 when it matched).
	KeywordsFound   []string `json:"keywords_found"`
	Keywords        int      `json:"keywords"`
	KeywordsNeeded  int      `json:"keywords_needed"`
	KeywordsMissing int      `json:"keywords_missing"`
	// Reason says the above in a sentence.
	Reason string `json:"reason"`
	// Highlights are where each found keyword occurs in the posted text.
	Highlights []Highlight `json:"highlights"`
}

// EngineInfo describes the engine that answered.
type EngineInfo struct {
	Matcher  string `json:"matcher"`
	Stemming bool   `json:"stemming"`
	Scoring  string `json:"scoring"`
}

// TestResponse is the POST /rules/test response.
type TestResponse struct {
	// Matches are every rule that matched, highest priority then score
	// first, as the pipeline sees them.
	Matches []RuleMatch `json:"matches"`
	// Explanations are every rule that scored above zero (found at least one
	// keyword), matched or not, in the same order, so that near misses can be
	// read next to the matches.
	Explanations []RuleExplanation `json:"explanations"`
	// Engine is the matcher, stemming and scoring of the engine, when known.
	Engine *EngineInfo `json:"engine,omitempty"`
	// Topics are the topics the rules decide alone, each once, with their
	// effects applied (topicmodel.Decide without a model): an override
	// rule's topic first, then the matched support rules' topics in match
	// order, none that an exclude rule vetoed.
	Topics []string `json:"topics"`
	// IsCrimeRelated and CrimeSubcategory are what the pipeline would set
	// from the rules alone.
	IsCrimeRelated   bool    `json:"is_crime_related"`
	CrimeSubcategory *string `json:"crime_subcategory"`
	// Vetoed are the topics matched exclude rules vetoed, each with the
	// first rule that vetoed it (crime: every crime subcategory).
	Vetoed []topicmodel.Veto `json:"vetoed"`
	// OverriddenBy names the matched override rule whose topic comes first.
	OverriddenBy string `json:"overridden_by,omitempty"`
	// RulesVersion is the rule-set version the engine held, when known.
	RulesVersion *int64 `json:"rules_version,omitempty"`
}

// POST /rules/test
func (h *handler) testRules(c *gin.Context) {
	var req testRequest
	if !httpserver.DecodeJSON(c, &req) {
		return
	}
	if req.Text != nil && (req.Title != nil || req.Body != nil) {
		httpserver.WriteBadRequest(c, "text: send either text, or title and body, not both")
		return
	}
	var info *EngineInfo
	stem := false
	if o, ok := h.Engine.(interface{ Options() rules.Options }); ok {
		opts := o.Options()
		stem = opts.Stemming
		info = &EngineInfo{Matcher: string(opts.Matcher), Stemming: opts.Stemming, Scoring: string(opts.Scoring)}
	}
	var fields []*fieldText
	var title, body string
	if req.Text != nil {
		if strings.TrimSpace(*req.Text) == "" {
			httpserver.WriteBadRequest(c, "text: must not be empty")
			return
		}
		fields = append(fields, newFieldTextStemmed("text", *req.Text, stem))
		body = *req.Text
	} else {
		title, body = deref(req.Title), deref(req.Body)
		if strings.TrimSpace(title) == "" && strings.TrimSpace(body) == "" {
			httpserver.WriteBadRequest(c, "title, body: send a non-empty title or body (or text)")
			return
		}
		fields = append(fields, newFieldTextStemmed("title", title, stem), newFieldTextStemmed("body", body, stem))
	}
	// One engine call: the explanation when the engine gives one (its
	// matched rules are what Match returns), else Match.
	var matches, explained []rules.Match
	if ex, ok := h.Engine.(interface {
		Explain(title, body string) []rules.Match
	}); ok {
		explained = ex.Explain(title, body)
		for _, m := range explained {
			if m.Matched {
				matches = append(matches, m)
			}
		}
	} else {
		matches = h.Engine.Match(title, body)
		explained = matches
	}
	highlights := func(kws []string) []Highlight {
		out := []Highlight{}
		for _, kw := range kws {
			for _, f := range fields {
				out = append(out, f.find(kw)...)
			}
		}
		return out
	}

	resp := TestResponse{Matches: []RuleMatch{}, Explanations: []RuleExplanation{}, Topics: []string{},
		RulesVersion: h.rulesVersion(), Engine: info}
	for _, m := range explained {
		resp.Explanations = append(resp.Explanations, explainRule(m, highlights(m.MatchedKeywords)))
	}
	for _, m := range matches {
		resp.Matches = append(resp.Matches, RuleMatch{
			RuleID: m.Rule.ID, RuleName: m.Rule.Name, Topic: m.Rule.Topic, Effect: effect(m.Rule),
			Priority: m.Rule.Priority, MinConfidence: m.Rule.MinConfidence,
			Score: m.Score, Coverage: m.Coverage, Hits: m.Hits, UniqueMatches: m.UniqueMatches,
			MatchedKeywords: append([]string{}, m.MatchedKeywords...),
			Highlights:      highlights(m.MatchedKeywords),
		})
	}
	// The rules' own decision, as the pipeline makes it without a model.
	decided := topicmodel.Explain(nil, title, body, explained, topicmodel.DecideConfig{})
	for _, t := range decided.Decision.Topics {
		resp.Topics = append(resp.Topics, t.Topic)
	}
	if decided.Decision.Crime {
		sub := decided.Decision.Subcategory
		resp.IsCrimeRelated, resp.CrimeSubcategory = true, &sub
	}
	resp.Vetoed, resp.OverriddenBy = decided.Vetoed, decided.OverriddenBy
	c.JSON(http.StatusOK, resp)
}

// explainRule turns one rule of the engine's explanation into the response's
// form, with its reason in words.
func explainRule(m rules.Match, hl []Highlight) RuleExplanation {
	e := RuleExplanation{
		RuleID: m.Rule.ID, RuleName: m.Rule.Name, Topic: m.Rule.Topic, Priority: m.Rule.Priority, Effect: effect(m.Rule),
		Matched: m.Matched, Score: m.Score, MinConfidence: m.Rule.MinConfidence, MinKeywords: m.Rule.MinKeywords,
		Threshold: "min_confidence", KeywordsFound: append([]string{}, m.MatchedKeywords...),
		Keywords: m.Keywords, KeywordsNeeded: m.Needed, KeywordsMissing: max(0, m.Needed-m.Hits), Highlights: hl,
	}
	if !m.Matched && e.KeywordsMissing == 0 {
		e.KeywordsMissing = 1 // cannot happen with the engine's figures; never claim a miss needs nothing
	}
	if m.ByMinKeywords {
		e.Threshold = "min_keywords"
	}
	found := fmt.Sprintf("found %d distinct keyword%s (%s)", m.Hits, plural(m.Hits), strings.Join(m.MatchedKeywords, ", "))
	switch {
	case m.Matched && m.ByMinKeywords:
		e.Reason = fmt.Sprintf("Matched: %s; min_keywords is %d.", found, m.Rule.MinKeywords)
	case m.Matched:
		e.Reason = fmt.Sprintf("Matched: %s, score %.3f >= min_confidence %.2f.", found, m.Score, m.Rule.MinConfidence)
	case m.Needed > m.Keywords:
		e.Reason = fmt.Sprintf("No match: %s, but the rule can never match: it needs %d distinct keywords and has %d.",
			found, m.Needed, m.Keywords)
	case m.ByMinKeywords:
		e.Reason = fmt.Sprintf("No match: %s; min_keywords is %d, so %d more distinct keyword%s of the rule would make it match.",
			found, m.Rule.MinKeywords, e.KeywordsMissing, plural(e.KeywordsMissing))
	default:
		e.Reason = fmt.Sprintf("No match: %s, score %.3f < min_confidence %.2f; with %d keywords the rule needs %d distinct keywords, %d more.",
			found, m.Score, m.Rule.MinConfidence, m.Keywords, m.Needed, e.KeywordsMissing)
	}
	switch {
	case m.Matched && e.Effect == rules.EffectExclude && m.Rule.Topic == rules.CrimeFamily:
		e.Reason += " It is an exclude rule: every crime topic is vetoed."
	case m.Matched && e.Effect == rules.EffectExclude:
		e.Reason += fmt.Sprintf(" It is an exclude rule: %s is vetoed.", m.Rule.Topic)
	case m.Matched && e.Effect == rules.EffectOverride:
		e.Reason += fmt.Sprintf(" It is an override rule: %s is the primary topic unless an exclude rule vetoes it.", m.Rule.Topic)
	}
	return e
}

// effect is r's effect, "" read as support (rules.ParseEffect).
func effect(r *rules.Rule) rules.Effect {
	if e, err := rules.ParseEffect(string(r.Effect)); err == nil {
		return e
	}
	return r.Effect
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
