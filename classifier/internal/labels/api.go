package labels

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/fault"
	"github.com/north-cloud/infrastructure/httpserver"
)

// API defaults.
const (
	CandidatesLimitDefault = 20
	CandidatesLimitMax     = 100
	ListLimitDefault       = 50
	ListLimitMax           = 500
	RequestTimeoutDefault  = 10 * time.Second
)

// Deps are the label API's collaborators.
type Deps struct {
	Store  *Store
	Finder *Finder
	// Topics returns the topics an operator may choose from (the deciding
	// model's and the rules'), offered with the candidates.
	Topics func() []string
	Logger *slog.Logger
	// Timeout bounds each request's Elasticsearch and database work.
	// Defaults to RequestTimeoutDefault.
	Timeout time.Duration
}

type handler struct{ Deps }

// Register adds the /labels routes to router (the guarded /api/v1 group).
func Register(router gin.IRouter, deps Deps) error {
	if deps.Store == nil || deps.Finder == nil || deps.Logger == nil {
		return errors.New("register labels api: Store, Finder and Logger are required")
	}
	deps.Timeout = config.PositiveOr(deps.Timeout, RequestTimeoutDefault)
	if deps.Topics == nil {
		deps.Topics = func() []string { return nil }
	}
	deps.Logger = deps.Logger.With(slog.String("component", "labels_api"))
	h := &handler{Deps: deps}
	// Route table: same shape as every API's; the routes are this one's own.
	router.GET("/labels", h.list)
	router.POST("/labels", h.put)
	router.GET("/labels/candidates", h.candidates)
	router.GET("/labels/export", h.export)
	router.GET("/labels/stats", h.stats)
	router.DELETE("/labels/:id", h.delete)
	return nil
}

func (h *handler) fail(c *gin.Context, err error) {
	switch {
	case errors.Is(err, ErrInvalid):
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, err.Error())
	case errors.Is(err, ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, err.Error())
	case errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded):
		httpserver.WriteUnavailable(c, h.Logger, httpserver.CodeDatabaseUnavailable, "the label store is unavailable; retry later", err)
	case fault.Elasticsearch(err) != fault.Statement:
		// Elasticsearch down, overloaded or slow: the caller may retry.
		httpserver.WriteUnavailable(c, h.Logger, httpserver.CodeUnavailable, "Elasticsearch did not answer; retry later", err)
	default:
		httpserver.WriteInternal(c, h.Logger, err)
	}
}

type candidatesResponse struct {
	Candidates      []Candidate `json:"candidates"`
	TopicsAvailable []string    `json:"topics_available"`
}

func (h *handler) candidates(c *gin.Context) {
	n, ok := httpserver.QueryLimit(c, CandidatesLimitDefault, CandidatesLimitMax)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.Timeout)
	defer cancel()
	cs, err := h.Finder.Candidates(ctx, n, h.Store.Labelled)
	if err != nil {
		h.fail(c, err)
		return
	}
	topics := slices.Clone(h.Topics())
	slices.Sort(topics)
	topics = slices.Compact(topics)
	if topics == nil {
		topics = []string{}
	}
	c.JSON(http.StatusOK, candidatesResponse{Candidates: cs, TopicsAvailable: topics})
}

type putRequest struct {
	Index string `json:"index"`
	ID    string `json:"id"`
	Label string `json:"label"`
}

// put labels a classified document: its text is read from its classified
// twin and kept with the label, with what the classifier had decided.
func (h *handler) put(c *gin.Context) {
	var req putRequest
	if !httpserver.DecodeJSON(c, &req) {
		return
	}
	if !ValidLabel(req.Label) || req.Index == "" || req.ID == "" {
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest,
			"index, id and label are required; label is a topic name (lower case letters, digits and _, at most 64)")
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.Timeout)
	defer cancel()
	doc, err := h.Finder.Document(ctx, req.Index, req.ID)
	if err != nil {
		h.fail(c, err)
		return
	}
	l, created, err := h.Store.Put(ctx, Label{Index: req.Index, ContentID: req.ID, Label: req.Label, Title: doc.Title, Body: doc.Text,
		PredictedTopic: doc.PrimaryTopic, PredictedConfidence: doc.Confidence, LabelledBy: auth.Subject(c)})
	if err != nil {
		h.fail(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, l)
}

func (h *handler) list(c *gin.Context) {
	n, ok := httpserver.QueryLimit(c, ListLimitDefault, ListLimitMax)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.Timeout)
	defer cancel()
	out, err := h.Store.List(ctx, n)
	httpserver.Respond(c, http.StatusOK, out, err, h.fail)
}

func (h *handler) delete(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, "id must be a positive integer")
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.Timeout)
	defer cancel()
	if err := h.Store.Delete(ctx, id); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// export streams every label as labelled NDJSON, the format classifier
// train reads.
func (h *handler) export(c *gin.Context) {
	c.Header("Content-Type", "application/x-ndjson")
	c.Header("Content-Disposition", `attachment; filename="topic-labels.ndjson"`)
	c.Status(http.StatusOK)
	if _, err := h.Store.Export(c.Request.Context(), c.Writer); err != nil {
		// The status is sent: the client sees a short body.
		h.Logger.ErrorContext(c.Request.Context(), "label export cut short", slog.Any("error", err))
	}
}

func (h *handler) stats(c *gin.Context) {
	ctx, cancel := httpserver.WithTimeout(c, h.Timeout)
	defer cancel()
	s, err := h.Store.Stats(ctx)
	httpserver.Respond(c, http.StatusOK, s, err, h.fail)
}
