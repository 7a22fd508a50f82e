package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/rules"
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
	Score         float64 `json:"score"`
	Coverage      float64 `json:"coverage"`
	// Hits is the number of distinct keywords found (the engine counts
	// presence, not repetitions); it equals UniqueMatches.
	Hits          int `json:"hits"`
	UniqueMatches int `json:"unique_matches"`
	// MatchedKeywords are the keywords found, as the rule spells them.
	MatchedKeywords []string `json:"matched_keywords"`
	// Highlights are where each matched keyword occurs in the posted text.
	Highlights []Highlight `json:"highlights"`
}

// TestResponse is the POST /rules/test response.
type TestResponse struct {
	// Matches are every rule that matched, highest priority then score
	// first, as the pipeline sees them.
	Matches []RuleMatch `json:"matches"`
	// Topics are the matched topics in that order, each once.
	Topics []string `json:"topics"`
	// IsCrimeRelated and CrimeSubcategory are what the pipeline would set.
	IsCrimeRelated   bool    `json:"is_crime_related"`
	CrimeSubcategory *string `json:"crime_subcategory"`
	// RulesVersion is the rule-set version the engine held, when known.
	RulesVersion *int64 `json:"rules_version,omitempty"`
}

// POST /rules/test
func (h *handler) testRules(c *gin.Context) {
	var req testRequest
	if !decodeJSON(c, &req) {
		return
	}
	if req.Text != nil && (req.Title != nil || req.Body != nil) {
		badRequest(c, "text: send either text, or title and body, not both")
		return
	}
	var fields []*fieldText
	var matches []rules.Match
	if req.Text != nil {
		if strings.TrimSpace(*req.Text) == "" {
			badRequest(c, "text: must not be empty")
			return
		}
		fields = append(fields, newFieldText("text", *req.Text))
		matches = h.Engine.Match("", *req.Text)
	} else {
		title, body := deref(req.Title), deref(req.Body)
		if strings.TrimSpace(title) == "" && strings.TrimSpace(body) == "" {
			badRequest(c, "title, body: send a non-empty title or body (or text)")
			return
		}
		fields = append(fields, newFieldText("title", title), newFieldText("body", body))
		matches = h.Engine.Match(title, body)
	}

	resp := TestResponse{Matches: []RuleMatch{}, Topics: []string{}, RulesVersion: h.rulesVersion()}
	seenTopic := make(map[string]bool)
	for _, m := range matches {
		rm := RuleMatch{
			RuleID: m.Rule.ID, RuleName: m.Rule.Name, Topic: m.Rule.Topic,
			Priority: m.Rule.Priority, MinConfidence: m.Rule.MinConfidence,
			Score: m.Score, Coverage: m.Coverage, Hits: m.Hits, UniqueMatches: m.UniqueMatches,
			MatchedKeywords: append([]string{}, m.MatchedKeywords...),
			Highlights:      []Highlight{},
		}
		for _, kw := range m.MatchedKeywords {
			for _, f := range fields {
				rm.Highlights = append(rm.Highlights, f.find(kw)...)
			}
		}
		resp.Matches = append(resp.Matches, rm)
		if !seenTopic[rm.Topic] {
			seenTopic[rm.Topic] = true
			resp.Topics = append(resp.Topics, rm.Topic)
		}
		if rules.IsCrimeSubcategory(rm.Topic) {
			resp.IsCrimeRelated = true
			if resp.CrimeSubcategory == nil {
				topic := rm.Topic
				resp.CrimeSubcategory = &topic
			}
		}
	}
	c.JSON(http.StatusOK, resp)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
