package audit

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Lister reads entries (Store).
type Lister interface {
	List(ctx context.Context, f Filter) ([]Entry, error)
}

// ListResponse answers GET /api/v1/audit.
type ListResponse struct {
	Entries []Entry `json:"entries"`
	// NextBeforeID, when set, fetches the next (older) page as ?before_id=.
	NextBeforeID int64 `json:"next_before_id,omitempty"`
}

// ListOptions adapt the list endpoint to a service.
type ListOptions struct {
	// Actions, when set, are the only values the action filter takes.
	Actions []string
	// TargetParam is the query parameter of the target filter. Defaults
	// to "target" (the index-manager calls it "index").
	TargetParam string
}

// ListHandler serves GET /api/v1/audit: entries newest first, filtered by
// actor, role, action, target, outcome and time (since, until: RFC 3339),
// a page of limit entries (1 to ListLimitMax) older than before_id.
func ListHandler(store Lister, opts ListOptions, logger *slog.Logger) gin.HandlerFunc {
	if opts.TargetParam == "" {
		opts.TargetParam = "target"
	}
	return func(c *gin.Context) {
		f, limit, msg := parseFilter(c, opts)
		if msg != "" {
			httpserver.WriteError(c, http.StatusBadRequest, "invalid_request", msg)
			return
		}
		entries, err := store.List(c.Request.Context(), f)
		if err != nil {
			logger.ErrorContext(c.Request.Context(), "list audit entries", slog.Any("error", err))
			httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeDatabaseUnavailable, "the audit log is unavailable")
			return
		}
		// Entries are bounded in bytes when stored and listed; the page is
		// bounded too, ending early (with next_before_id) when it would
		// exceed MaxPageBytes.
		page, cut := FitPage(entries, MaxPageBytes)
		resp := ListResponse{Entries: page}
		if (cut || len(entries) == limit) && len(page) > 0 {
			resp.NextBeforeID = page[len(page)-1].ID
		}
		c.JSON(http.StatusOK, resp)
	}
}

// parseFilter reads the filter of a list request, or a message saying what
// is wrong with it.
func parseFilter(c *gin.Context, opts ListOptions) (Filter, int, string) {
	f := Filter{Actor: c.Query("actor"), Role: c.Query("role"), Action: c.Query("action"), Target: c.Query(opts.TargetParam),
		Outcome: c.Query("outcome")}
	// An enum given empty is a mistake, not "any": refused like any other
	// value outside the enum.
	for _, name := range []string{"action", "outcome", "role"} {
		if v, ok := c.GetQuery(name); ok && v == "" {
			return f, 0, name + " must not be empty"
		}
	}
	if len(opts.Actions) > 0 && f.Action != "" && !slices.Contains(opts.Actions, f.Action) {
		return f, 0, "action must be " + oneOf(opts.Actions)
	}
	if outcomes := []string{OutcomePending, OutcomeSuccess, OutcomeFailure, OutcomeDenied}; f.Outcome != "" && !slices.Contains(outcomes, f.Outcome) {
		return f, 0, "outcome must be " + oneOf(outcomes)
	}
	if _, err := auth.ParseRole(f.Role); f.Role != "" && err != nil {
		return f, 0, "role must be viewer, operator or admin"
	}
	if len(f.Actor) > MaxActorChars || len(f.Target) > MaxActorChars || len(f.Action) > 50 {
		return f, 0, fmt.Sprintf("actor, action and %s must be at most %d bytes", opts.TargetParam, MaxActorChars)
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v, ok := c.GetQuery(p.name); ok {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return f, 0, p.name + " must be an RFC 3339 time such as 2026-11-25T10:00:00Z"
			}
			// In UTC: Postgres refuses offsets Go accepts (such as -21:26).
			*p.dst = t.UTC()
		}
	}
	f.Limit = ListLimitDefault
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ListLimitMax {
			return f, 0, fmt.Sprintf("limit must be between 1 and %d", ListLimitMax)
		}
		f.Limit = n
	}
	if v, ok := c.GetQuery("before_id"); ok {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return f, 0, "before_id must be a positive integer"
		}
		f.BeforeID = id
	}
	return f, f.Limit, ""
}

// oneOf writes values as "a, b or c".
func oneOf(values []string) string {
	if len(values) == 1 {
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
