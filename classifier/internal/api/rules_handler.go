package api

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/infrastructure/httpserver"
)

// ruleRequest is the body of POST /rules and PUT /rules/:id. name, topic and
// keywords are required; min_confidence defaults to
// rulestore.MinConfidenceDefault, min_keywords to 0 on create (a PUT
// without it keeps the rule's), priority to 0 and enabled to true. PUT
// replaces the rest of the rule with the same defaults. One threshold
// decides a rule (rules.Rule.Threshold): min_keywords when it is above zero
// (under the default scoring), min_confidence otherwise; every answer names
// it in threshold. effect (rules.Effect: support, exclude, override)
// defaults to support on create, and a PUT without it keeps the rule's,
// as min_keywords; the topic crime takes effect exclude only.
type ruleRequest struct {
	Name          *string   `json:"name"`
	Topic         *string   `json:"topic"`
	Keywords      *[]string `json:"keywords"`
	MinConfidence *float64  `json:"min_confidence"`
	MinKeywords   *int      `json:"min_keywords"`
	Priority      *int      `json:"priority"`
	Enabled       *bool     `json:"enabled"`
	Effect        *string   `json:"effect"`
}

// ruleRequestFields are the JSON fields POST and PUT /rules accept, for the
// test that holds the OpenAPI document to them.
func ruleRequestFields() []string {
	t := reflect.TypeFor[ruleRequest]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return out
}

func (r ruleRequest) input() (rulestore.Input, error) {
	var missing []string
	if r.Name == nil {
		missing = append(missing, "name")
	}
	if r.Topic == nil {
		missing = append(missing, "topic")
	}
	if r.Keywords == nil {
		missing = append(missing, "keywords")
	}
	if len(missing) > 0 {
		problems := make([]rulestore.FieldError, len(missing))
		for i, f := range missing {
			problems[i] = rulestore.FieldError{Field: f, Message: "is required"}
		}
		return rulestore.Input{}, &rulestore.ValidationError{Problems: problems}
	}
	in := rulestore.Input{
		Name:          *r.Name,
		Topic:         *r.Topic,
		Keywords:      *r.Keywords,
		MinConfidence: rulestore.MinConfidenceDefault,
		Enabled:       true,
	}
	if r.MinConfidence != nil {
		in.MinConfidence = *r.MinConfidence
	}
	in.MinKeywords = r.MinKeywords
	if r.Effect != nil {
		e := rules.Effect(*r.Effect)
		in.Effect = &e
	}
	if r.Priority != nil {
		in.Priority = *r.Priority
	}
	if r.Enabled != nil {
		in.Enabled = *r.Enabled
	}
	return in, nil
}

type ruleList struct {
	Rules []rulestore.Rule `json:"rules"`
	Total int              `json:"total"`
}

// GET /rules?topic=&enabled=
func (h *handler) listRules(c *gin.Context) {
	var f rulestore.Filter
	if topic, ok := c.GetQuery("topic"); ok {
		if len(topic) > rulestore.MaxTopicLength {
			httpserver.WriteBadRequest(c, fmt.Sprintf("topic: must be at most %d characters", rulestore.MaxTopicLength))
			return
		}
		f.Topic = topic
	}
	if raw, ok := c.GetQuery("enabled"); ok {
		enabled, err := strconv.ParseBool(raw)
		if err != nil {
			httpserver.WriteBadRequest(c, fmt.Sprintf("enabled: must be true or false (got %q)", raw))
			return
		}
		f.Enabled = &enabled
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	list, err := h.Store.List(ctx, f)
	if err != nil {
		h.fail(c, err)
		return
	}
	for i := range list {
		list[i] = h.withThreshold(list[i])
	}
	c.JSON(http.StatusOK, ruleList{Rules: list, Total: len(list)})
}

// scoring is the live engine's scoring (rules.ScoringDefault when the
// engine does not say).
func (h *handler) scoring() rules.Scoring {
	if o, ok := h.Engine.(interface{ Options() rules.Options }); ok {
		return o.Options().Scoring
	}
	return rules.ScoringDefault
}

// withThreshold names the threshold that decides r under the live
// engine's scoring, as the engine and the playground decide it.
func (h *handler) withThreshold(r rulestore.Rule) rulestore.Rule {
	return r.WithThreshold(h.scoring())
}

// ruleID reads the :id parameter, writing a 400 when it is not a positive
// integer.
func ruleID(c *gin.Context) (int64, bool) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		httpserver.WriteBadRequest(c, fmt.Sprintf("id: must be a positive integer (got %q)", raw))
		return 0, false
	}
	return id, true
}

// GET /rules/:id
func (h *handler) getRule(c *gin.Context) {
	id, ok := ruleID(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	rule, err := h.Store.Get(ctx, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.withThreshold(rule))
}

// POST /rules
func (h *handler) createRule(c *gin.Context) {
	rule, ok := h.saveRule(c, h.Store.Create)
	if !ok {
		return
	}
	c.Header("Location", fmt.Sprintf("%s/%d", c.FullPath(), rule.ID))
	c.JSON(http.StatusCreated, h.withThreshold(rule))
}

// PUT /rules/:id
func (h *handler) updateRule(c *gin.Context) {
	id, ok := ruleID(c)
	if !ok {
		return
	}
	rule, ok := h.saveRule(c, func(ctx context.Context, in rulestore.Input) (rulestore.Rule, error) {
		return h.Store.Update(ctx, id, in)
	})
	if ok {
		c.JSON(http.StatusOK, h.withThreshold(rule))
	}
}

// saveRule decodes and checks the rule in the body and hands it to save
// (create or update), answering every failure itself: false after it did.
func (h *handler) saveRule(c *gin.Context, save func(context.Context, rulestore.Input) (rulestore.Rule, error)) (rulestore.Rule, bool) {
	var req ruleRequest
	if !httpserver.DecodeJSON(c, &req) {
		return rulestore.Rule{}, false
	}
	in, err := req.input()
	if err != nil {
		h.fail(c, err)
		return rulestore.Rule{}, false
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	rule, err := save(ctx, in)
	if err != nil {
		h.fail(c, err)
		return rulestore.Rule{}, false
	}
	return rule, true
}

// DELETE /rules/:id
func (h *handler) deleteRule(c *gin.Context) {
	id, ok := ruleID(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	if err := h.Store.Delete(ctx, id); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// POST /rules/:id/enable
func (h *handler) enableRule(c *gin.Context) { h.setEnabled(c, true) }

// POST /rules/:id/disable
func (h *handler) disableRule(c *gin.Context) { h.setEnabled(c, false) }

func (h *handler) setEnabled(c *gin.Context, enabled bool) {
	id, ok := ruleID(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	rule, err := h.Store.SetEnabled(ctx, id, enabled)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.withThreshold(rule))
}
