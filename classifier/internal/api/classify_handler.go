package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/topicmodel"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/httpserver"
)

// DryRunID is the id given to a posted document that has none: the dry run
// writes nothing, so the id only has to satisfy the pipeline.
const DryRunID = "dry-run"

// ClassifyResponse is the POST /classify response.
type ClassifyResponse struct {
	// Document is the classified document exactly as the pipeline would
	// write it to Elasticsearch. Nothing was written.
	Document *domain.ClassifiedContent `json:"document"`
	// RulesVersion is the rule-set version the pipeline's engine held, when
	// known.
	RulesVersion *int64 `json:"rules_version,omitempty"`
	// Explanation says why the document got its topics: what the model
	// said, which words pushed which topic and by how much, and what the
	// rules found (when the pipeline can explain).
	Explanation *topicmodel.Explanation `json:"explanation,omitempty"`
}

// DecisionExplainer is a Pipeline that can explain its topic decision;
// *pipeline.Pipeline is one.
type DecisionExplainer interface {
	ExplainDecision(index, id, title, body string) topicmodel.Explanation
}

// POST /classify: the body is a raw document as the crawler writes it to
// {source}_raw_content (url, title, raw_text, og_type, published_date, ...).
// Unknown fields are ignored, as the pipeline ignores them, so a document
// copied from Elasticsearch can be pasted as is; everything else follows the
// strict rule (one object, no null, no trailing data, no NUL). A document the pipeline
// refuses (no URL, a non-http URL, no text) is a 422 with the reason.
func (h *handler) classify(c *gin.Context) {
	var doc contentindex.RawDocument
	if !httpserver.DecodeJSONWith(c, &doc, httpserver.JSONOptions{AllowUnknownFields: true, AllowNull: true}) {
		return
	}
	if doc.ID == "" {
		doc.ID = DryRunID
	}
	if doc.CrawledAt.IsZero() {
		doc.CrawledAt = time.Now().UTC()
	}
	out, err := h.Pipeline.Classify(&domain.RawContent{RawDocument: doc})
	if err != nil {
		if errors.Is(err, pipeline.ErrUnprocessable) {
			httpserver.WriteError(c, http.StatusUnprocessableEntity, httpserver.CodeUnprocessable, err.Error())
			return
		}
		h.Logger.ErrorContext(c.Request.Context(), "dry-run classification failed",
			"request_id", httpserver.RequestID(c.Request.Context()), "error", err)
		httpserver.WriteError(c, http.StatusInternalServerError, httpserver.CodeInternal, "classification failed")
		return
	}
	resp := ClassifyResponse{Document: out, RulesVersion: h.rulesVersion()}
	if x, ok := h.Pipeline.(DecisionExplainer); ok {
		e := x.ExplainDecision("", doc.ID, out.Title, out.RawText)
		resp.Explanation = &e
	}
	c.JSON(http.StatusOK, resp)
}
