package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/audit"
)

// AuditListResponse answers GET /api/v1/audit.
type AuditListResponse struct {
	Entries []audit.Entry `json:"entries"`
	// NextBeforeID, when set, fetches the next (older) page as ?before_id=.
	NextBeforeID int64 `json:"next_before_id,omitempty"`
}

func (h *Handler) listAudit(c *gin.Context) {
	f := audit.Filter{Actor: c.Query("actor"), Action: c.Query("action"), Index: c.Query("index"), Outcome: c.Query("outcome")}
	// An enum given empty is a mistake, not "any": refused like any other
	// value outside the enum.
	for _, name := range []string{"action", "outcome"} {
		if v, ok := c.GetQuery(name); ok && v == "" {
			h.fail(c, invalid("%s must not be empty", name))
			return
		}
	}
	switch f.Action {
	case "", audit.ActionCreate, audit.ActionDelete, audit.ActionRefresh:
	default:
		h.fail(c, invalid("action must be create, delete or refresh"))
		return
	}
	switch f.Outcome {
	case "", audit.OutcomePending, audit.OutcomeSuccess, audit.OutcomeFailure:
	default:
		h.fail(c, invalid("outcome must be pending, success or failure"))
		return
	}
	if len(f.Actor) > 255 || len(f.Index) > 255 {
		h.fail(c, invalid("actor and index must be at most 255 bytes"))
		return
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v, ok := c.GetQuery(p.name); ok {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				h.fail(c, invalid("%s must be an RFC 3339 time such as 2026-11-25T10:00:00Z", p.name))
				return
			}
			// In UTC: Postgres refuses offsets Go accepts (such as -21:26).
			*p.dst = t.UTC()
		}
	}
	limit, err := intParam(c, "limit", audit.ListLimitDefault)
	if err != nil || limit < 1 || limit > audit.ListLimitMax {
		h.fail(c, invalid("limit must be between 1 and %d", audit.ListLimitMax))
		return
	}
	f.Limit = limit
	if v := c.Query("before_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			h.fail(c, invalid("before_id must be a positive integer"))
			return
		}
		f.BeforeID = id
	}
	entries, err := h.audit.List(c.Request.Context(), f)
	if err != nil {
		h.logger.ErrorContext(c.Request.Context(), "list audit entries", "error", err)
		h.fail(c, errDatabase)
		return
	}
	// Entries are bounded in bytes when stored and listed; the page is
	// bounded too, ending early (with next_before_id) when it would exceed
	// audit.MaxPageBytes.
	page, cut := audit.FitPage(entries, audit.MaxPageBytes)
	resp := AuditListResponse{Entries: page}
	if (cut || len(entries) == limit) && len(page) > 0 {
		resp.NextBeforeID = page[len(page)-1].ID
	}
	c.JSON(http.StatusOK, resp)
}
