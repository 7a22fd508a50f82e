// Package modelapi serves the topic-model routes of the classifier's API
// under /api/v1/models: list and read the stored models, train one from
// labelled NDJSON, make one the candidate (shadow, then a rollout share),
// promote it, roll the active model back, and delete one not in use. The
// caller mounts it on the group guarded by the JWT middleware, the role
// policy and the audit log.
package modelapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/modelstore"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Store is what the API needs of the model repository;
// *modelstore.Repository is one.
type Store interface {
	List(ctx context.Context) ([]modelstore.Summary, error)
	Get(ctx context.Context, id int64) (modelstore.Summary, error)
	Create(ctx context.Context, in modelstore.NewModel) (modelstore.Summary, error)
	SetCandidate(ctx context.Context, id int64, percent int) (modelstore.Summary, error)
	ClearCandidate(ctx context.Context) (modelstore.Summary, error)
	Promote(ctx context.Context, id int64) (modelstore.Summary, error)
	Rollback(ctx context.Context) (*modelstore.Summary, error)
	Delete(ctx context.Context, id int64) error
}

// Defaults of Deps.
const (
	// DBTimeoutDefault bounds the database work of one request.
	DBTimeoutDefault = 10 * time.Second
	// MaxTrainBytesDefault bounds the labelled NDJSON of POST /models/train.
	MaxTrainBytesDefault int64 = 32 << 20
	// MaxTrainDocumentsDefault bounds how many documents one training
	// request may carry.
	MaxTrainDocumentsDefault = 100_000
	// TrainTimeoutDefault bounds one training.
	TrainTimeoutDefault = 5 * time.Minute
)

// Deps are the API's collaborators.
type Deps struct {
	// Store holds the models. Required.
	Store Store
	// Base is the model a trained model learns on top of (the shipped
	// lexicon, topicmodel.TrainConfig.Base); nil trains without one.
	Base *topicmodel.Model
	// Labels, when set, are the operators' stored labels, which
	// POST /models/train?from=labels trains on.
	Labels interface {
		Examples(ctx context.Context) ([]topicmodel.Example, error)
	}
	// InUse, when set, reports the models this replica serves now
	// (modelstore.Models.InUse), shown by GET /models.
	InUse func() modelstore.InUse
	// Logger logs unexpected errors. Required.
	Logger *slog.Logger
	// DBTimeout defaults to DBTimeoutDefault, MaxTrainBytes to
	// MaxTrainBytesDefault, MaxTrainDocuments to MaxTrainDocumentsDefault,
	// TrainTimeout to TrainTimeoutDefault.
	DBTimeout         time.Duration
	MaxTrainBytes     int64
	MaxTrainDocuments int
	TrainTimeout      time.Duration
}

type handler struct{ Deps }

// Register adds the model routes to router.
func Register(router gin.IRouter, deps Deps) error {
	if deps.Store == nil || deps.Logger == nil {
		return errors.New("register models api: Store and Logger are required")
	}
	deps.DBTimeout = config.PositiveOr(deps.DBTimeout, DBTimeoutDefault)
	deps.MaxTrainBytes = config.PositiveOr(deps.MaxTrainBytes, MaxTrainBytesDefault)
	deps.MaxTrainDocuments = config.PositiveOr(deps.MaxTrainDocuments, MaxTrainDocumentsDefault)
	deps.TrainTimeout = config.PositiveOr(deps.TrainTimeout, TrainTimeoutDefault)
	deps.Logger = deps.Logger.With(slog.String("component", "models_api"))
	h := &handler{Deps: deps}
	// Route table: same shape as every API's; the routes are this one's own.
	router.GET("/models", h.list)
	// One training at a time per replica: it takes a core for seconds.
	router.POST("/models/train", httpserver.LimitConcurrency(1, 5), httpserver.LimitBody(deps.MaxTrainBytes), h.train)
	router.POST("/models/rollback", h.rollback)
	router.DELETE("/models/candidate", h.clearCandidate)
	router.GET("/models/:id", h.get)
	router.DELETE("/models/:id", h.delete)
	router.POST("/models/:id/candidate", h.candidate)
	router.POST("/models/:id/promote", h.promote)
	return nil
}

// fail maps an error to its status, in one place.
func (h *handler) fail(c *gin.Context, err error) {
	switch {
	case errors.Is(err, modelstore.ErrInvalid) || errors.Is(err, topicmodel.ErrTooFewExamples) || errors.Is(err, topicmodel.ErrInvalidModel):
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, err.Error())
	case errors.Is(err, modelstore.ErrNotFound):
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, "topic model not found")
	case errors.Is(err, modelstore.ErrConflict):
		httpserver.WriteError(c, http.StatusConflict, httpserver.CodeConflict, err.Error())
	case errors.Is(err, modelstore.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || rulestore.IsUnavailable(err):
		httpserver.WriteUnavailable(c, h.Logger, httpserver.CodeDatabaseUnavailable, "the model database is unavailable; retry later", err)
	default:
		httpserver.WriteInternal(c, h.Logger, err)
	}
}

// The handlers below share their shape with every API's handlers (a
// deadline, one store call, fail or answer JSON): the shared steps are
// httpserver's; what differs is the store method and its error map.

func pathID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, "id must be a positive integer")
		return 0, false
	}
	return id, true
}

type listResponse struct {
	Models []modelstore.Summary `json:"models"`
	// Serving is what this replica decides with now: the active model (0:
	// the shipped lexicon), the candidate (0: none) and its rollout share.
	Serving *serving `json:"serving,omitempty"`
}

type serving struct {
	Active         int64 `json:"active_model_id"`
	Candidate      int64 `json:"candidate_model_id"`
	RolloutPercent int   `json:"rollout_percent"`
}

func (h *handler) list(c *gin.Context) {
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	ms, err := h.Store.List(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	resp := listResponse{Models: ms}
	if h.InUse != nil {
		u := h.InUse()
		resp.Serving = &serving{Active: u.Active, Candidate: u.Candidate, RolloutPercent: u.RolloutPercent}
	}
	c.JSON(http.StatusOK, resp)
}

func (h *handler) get(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	s, err := h.Store.Get(ctx, id)
	httpserver.Respond(c, http.StatusOK, s, err, h.fail)
}

// train learns a model from the labelled NDJSON body and stores it,
// inactive, under the name in ?name=.
func (h *handler) train(c *gin.Context) {
	name := strings.TrimSpace(c.Query("name"))
	if name == "" || len(name) > 100 {
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, "name (query) is required, 1..100 characters")
		return
	}
	examples, ok := h.examples(c)
	if !ok {
		return
	}
	via := "api"
	if c.Query("from") == "labels" {
		via = "labels"
	}
	tctx, cancel := httpserver.WithTimeout(c, h.TrainTimeout)
	defer cancel()
	start := time.Now()
	m, err := topicmodel.Train(tctx, examples, topicmodel.TrainConfig{Base: h.Base})
	if err != nil {
		h.fail(c, err)
		return
	}
	ctx, cancelDB := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancelDB()
	s, err := h.Store.Create(ctx, modelstore.NewModel{Name: name, Model: m, CreatedBy: auth.Subject(c),
		TrainedOn: map[string]any{"documents": len(examples), "per_topic": topicmodel.PerTopic(examples), "via": via,
			"seconds": time.Since(start).Seconds()}})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, s)
}

// examples are what POST /models/train learns from: the labelled NDJSON
// body, or with ?from=labels the stored labels. False after an error
// answer.
func (h *handler) examples(c *gin.Context) ([]topicmodel.Example, bool) {
	switch c.Query("from") {
	case "":
	case "labels":
		if h.Labels == nil {
			httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, "this replica has no label store")
			return nil, false
		}
		ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
		defer cancel()
		ex, err := h.Labels.Examples(ctx)
		if err != nil {
			h.fail(c, err)
			return nil, false
		}
		return ex, true
	default:
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, "from must be labels, or absent to train on the body")
		return nil, false
	}
	items, err := topicmodel.ReadLabelled(c.Request.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpserver.WriteError(c, http.StatusRequestEntityTooLarge, httpserver.CodeBodyTooLarge,
				fmt.Sprintf("the labelled documents are over %d bytes", h.MaxTrainBytes))
			return nil, false
		}
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, "labelled NDJSON: "+err.Error())
		return nil, false
	}
	if len(items) > h.MaxTrainDocuments {
		httpserver.WriteError(c, http.StatusRequestEntityTooLarge, httpserver.CodeBodyTooLarge,
			fmt.Sprintf("%d documents, over %d", len(items), h.MaxTrainDocuments))
		return nil, false
	}
	return topicmodel.Examples(items), true
}

type candidateRequest struct {
	RolloutPercent *int `json:"rollout_percent"`
}

// candidate makes a model the candidate: scored in shadow beside the
// active model, deciding the rollout share of documents (0 by default).
func (h *handler) candidate(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	var req candidateRequest
	if c.Request.ContentLength != 0 && !httpserver.DecodeJSON(c, &req) {
		return
	}
	pct := 0
	if req.RolloutPercent != nil {
		pct = *req.RolloutPercent
	}
	if pct < 0 || pct > 100 {
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, "rollout_percent must be 0..100")
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	s, err := h.Store.SetCandidate(ctx, id, pct)
	httpserver.Respond(c, http.StatusOK, s, err, h.fail)
}

func (h *handler) clearCandidate(c *gin.Context) {
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	s, err := h.Store.ClearCandidate(ctx)
	httpserver.Respond(c, http.StatusOK, s, err, h.fail)
}

func (h *handler) promote(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	s, err := h.Store.Promote(ctx, id)
	httpserver.Respond(c, http.StatusOK, s, err, h.fail)
}

type rollbackResponse struct {
	// Active is the model active after the rollback; null when the shipped
	// lexicon decides again.
	Active *modelstore.Summary `json:"active"`
}

func (h *handler) rollback(c *gin.Context) {
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	s, err := h.Store.Rollback(ctx)
	httpserver.Respond(c, http.StatusOK, rollbackResponse{Active: s}, err, h.fail)
}

func (h *handler) delete(c *gin.Context) {
	id, ok := pathID(c)
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
