package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/audit"
	shared "github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Bounds of a silence audit record (POST /api/v1/audit/silences).
const (
	silenceIDMaxBytes      = 64
	silenceCommentMaxBytes = 1024
	silenceMatchersMax     = 16
	silenceLabelMaxBytes   = 255
)

// SilenceMatcher is one label matcher of an Alertmanager silence.
type SilenceMatcher struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SilenceAuditRequest is the body of POST /api/v1/audit/silences: a
// silence the dashboard server set or expired in Alertmanager, recorded in
// this service's audit log because Alertmanager forgets expired silences
// (docs/runbook.md, "Silences"). Who did it is the token's subject, never a
// field of the body.
type SilenceAuditRequest struct {
	// Action is silence or expire_silence.
	Action    string           `json:"action"`
	SilenceID string           `json:"silence_id"`
	Alertname string           `json:"alertname"`
	Matchers  []SilenceMatcher `json:"matchers"`
	StartsAt  time.Time        `json:"starts_at"`
	EndsAt    time.Time        `json:"ends_at"`
	Comment   string           `json:"comment"`
}

// SilenceAuditResponse answers POST /api/v1/audit/silences.
type SilenceAuditResponse struct {
	Recorded bool `json:"recorded"`
}

// check returns what is wrong with the record, or "".
func (r SilenceAuditRequest) check() string {
	switch {
	case r.Action != audit.ActionSilence && r.Action != audit.ActionExpireSilence:
		return "action must be " + audit.ActionSilence + " or " + audit.ActionExpireSilence
	case r.SilenceID == "" || len(r.SilenceID) > silenceIDMaxBytes:
		return "silence_id is required, at most 64 bytes"
	case r.Alertname == "" || len(r.Alertname) > silenceLabelMaxBytes:
		return "alertname is required, at most 255 bytes"
	case len(r.Matchers) > silenceMatchersMax:
		return "at most 16 matchers"
	case r.EndsAt.IsZero():
		return "ends_at is required (RFC 3339)"
	case len(r.Comment) > silenceCommentMaxBytes || !utf8.ValidString(r.Comment):
		return "comment is at most 1024 bytes of UTF-8"
	}
	for _, m := range r.Matchers {
		if m.Name == "" || len(m.Name) > silenceLabelMaxBytes || len(m.Value) > silenceLabelMaxBytes {
			return "every matcher needs a name; names and values are at most 255 bytes"
		}
	}
	return ""
}

// recordSilence writes one silence record to the audit log (action
// silence or expire_silence, target the alert name), or answers 503 when
// the log does not take it, so the dashboard server can undo a silence
// that would otherwise go unrecorded.
func (h *Handler) recordSilence(c *gin.Context) {
	var req SilenceAuditRequest
	if !h.bindJSON(c, &req) {
		return
	}
	if msg := req.check(); msg != "" {
		httpserver.WriteError(c, http.StatusBadRequest, httpserver.CodeBadRequest, msg)
		return
	}
	matchers := make([]map[string]string, 0, len(req.Matchers))
	for _, m := range req.Matchers {
		matchers = append(matchers, map[string]string{"name": m.Name, "value": m.Value})
	}
	params := map[string]any{"silence_id": req.SilenceID, "matchers": matchers, "ends_at": req.EndsAt.UTC().Format(time.RFC3339)}
	if !req.StartsAt.IsZero() {
		params["starts_at"] = req.StartsAt.UTC().Format(time.RFC3339)
	}
	summary := "silenced " + req.Alertname + " until " + req.EndsAt.UTC().Format(time.RFC3339)
	if req.Action == audit.ActionExpireSilence {
		summary = "expired the silence of " + req.Alertname + " (was until " + req.EndsAt.UTC().Format(time.RFC3339) + ")"
	}
	if c := strings.TrimSpace(req.Comment); c != "" {
		summary += ": " + c
	}
	status := http.StatusCreated
	actor := audit.SafeActor(auth.Subject(c))
	e := audit.Entry{Actor: actor, Role: string(auth.RoleOf(c)), Method: c.Request.Method, Route: c.FullPath(),
		Action: req.Action, Target: req.Alertname, Parameters: params, Summary: summary,
		Outcome: audit.OutcomeSuccess, StatusCode: &status, RequestID: httpserver.RequestID(c)}
	// This entry is the request's: the audit middleware does not write another.
	shared.MarkRecorded(c)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 5*time.Second)
	defer cancel()
	if err := h.audit.Record(ctx, e); err != nil {
		h.logger.ErrorContext(c.Request.Context(), "silence audit record not written", slog.String("action", req.Action),
			slog.String("silence_id", req.SilenceID), slog.String("actor", actor), slog.Any("error", err))
		httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeDatabaseUnavailable, "the audit log is unavailable: the silence is not recorded")
		return
	}
	h.logger.InfoContext(c.Request.Context(), "silence recorded", slog.String("action", req.Action), slog.String("silence_id", req.SilenceID),
		slog.String("alertname", req.Alertname), slog.String("actor", actor))
	c.JSON(status, SilenceAuditResponse{Recorded: true})
}
