package deadletter

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
)

// Page sizes of GET /dlq.
const (
	LimitDefault = 50
	LimitMax     = 500
)

// DBTimeoutDefault bounds the database work of one request.
const DBTimeoutDefault = 5 * time.Second

// Bounds of the filters: a source name (far above any real one), an error
// code, and, in characters, the content_id and index filters: the widths of
// the columns they are compared with, so a longer value could match nothing.
const (
	maxSourceBytes    = 255
	maxErrorCodeBytes = 50
	maxContentIDChars = 512
	maxIndexChars     = 255
)

// RoutesConfig configures the operator's routes over the queue.
type RoutesConfig struct {
	// Repository is the queue. Required.
	Repository *Repository
	// Logger logs database errors and every requeue and delete, with the
	// token's subject. Required.
	Logger *slog.Logger
	// DBTimeout bounds each request's database work. Defaults to
	// DBTimeoutDefault.
	DBTimeout time.Duration
}

type routes struct{ RoutesConfig }

// RegisterRoutes mounts the operator's routes on router, the /api/v1 group
// guarded by the JWT middleware:
//
//	GET    /dlq             entries, newest first, filtered and paged
//	GET    /dlq/stats       the queue at a glance
//	POST   /dlq/requeue     requeue every entry matching a filter, skipping permanent error codes
//	POST   /dlq/delete      delete every entry matching a filter
//	POST   /dlq/:id/requeue requeue one entry (409 for a permanent error code)
//	GET    /dlq/:id/attempts an entry's failures, oldest first (its last AttemptsKept)
//	DELETE /dlq/:id         delete one entry
func RegisterRoutes(router gin.IRouter, cfg RoutesConfig) error {
	var errs []error
	if cfg.Repository == nil {
		errs = append(errs, errors.New("Repository is required"))
	}
	if cfg.Logger == nil {
		errs = append(errs, errors.New("Logger is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register dead-letter routes: %w", err)
	}
	if cfg.DBTimeout <= 0 {
		cfg.DBTimeout = DBTimeoutDefault
	}
	h := &routes{cfg}
	// Route table: same shape as every API's; the routes are this one's own.
	router.GET("/dlq", h.list)
	router.GET("/dlq/stats", h.stats)
	router.POST("/dlq/requeue", h.requeueMatching)
	router.POST("/dlq/delete", h.deleteMatching)
	router.POST("/dlq/:id/requeue", h.requeueOne)
	router.GET("/dlq/:id/attempts", h.attempts)
	router.DELETE("/dlq/:id", h.deleteOne)
	return nil
}

// fail answers a repository error: 404 for a missing entry, otherwise 503
// with no driver text (the detail goes to the log).
func (h *routes) fail(c *gin.Context, op string, err error) {
	if errors.Is(err, ErrNotFound) {
		httpserver.WriteError(c, http.StatusNotFound, httpserver.CodeNotFound, err.Error())
		return
	}
	httpserver.WriteUnavailable(c, h.Logger, httpserver.CodeDatabaseUnavailable, op+" failed: the classifier database did not answer", err)
}

// parseFilter reads the filters every list and bulk route shares. An empty
// source means any source; noSource ("true") selects the entries recorded
// without one, and cannot be combined with a source.
func parseFilter(source, noSource, code, exhausted, permanent string) (Filter, error) {
	f := Filter{Source: strings.TrimSpace(source), ErrorCode: strings.ToUpper(strings.TrimSpace(code))}
	if noSource != "" {
		b, err := strconv.ParseBool(noSource)
		if err != nil {
			return f, fmt.Errorf("no_source must be true or false (got %q)", noSource)
		}
		if b && f.Source != "" {
			return f, errors.New("give source or no_source=true, not both: no_source selects the entries without a source name")
		}
		f.NoSource = b
	}
	for _, p := range []struct {
		name, value string
		out         **bool
	}{{"exhausted", exhausted, &f.Exhausted}, {"permanent", permanent, &f.Permanent}} {
		if p.value == "" {
			continue
		}
		b, err := strconv.ParseBool(p.value)
		if err != nil {
			return f, fmt.Errorf("%s must be true or false (got %q)", p.name, p.value)
		}
		*p.out = &b
	}
	if len(f.Source) > maxSourceBytes || len(f.ErrorCode) > maxErrorCodeBytes {
		return f, errors.New("source or error_code too long")
	}
	return f, nil
}

// documentFilter reads the exact content_id and index filters of GET /dlq,
// which select the entries of one document (the document page's view).
func documentFilter(c *gin.Context, f *Filter) error {
	f.ContentID, f.Index = c.Query("content_id"), c.Query("index")
	if n := utf8.RuneCountInString(f.ContentID); n > maxContentIDChars {
		return fmt.Errorf("content_id must be at most %d characters (got %d)", maxContentIDChars, n)
	}
	if n := utf8.RuneCountInString(f.Index); n > maxIndexChars {
		return fmt.Errorf("index must be at most %d characters (got %d)", maxIndexChars, n)
	}
	return nil
}

type listResponse struct {
	Entries    []domain.DeadLetterEntry `json:"entries"`
	NextCursor *string                  `json:"next_cursor"`
}

// GET /dlq?source=&no_source=&error_code=&exhausted=&permanent=&content_id=&index=&cursor=&limit=
func (h *routes) list(c *gin.Context) {
	f, err := parseFilter(c.Query("source"), c.Query("no_source"), c.Query("error_code"), c.Query("exhausted"), c.Query("permanent"))
	for _, name := range []string{"no_source", "exhausted", "permanent"} {
		if v, ok := c.GetQuery(name); err == nil && ok && v == "" {
			err = fmt.Errorf(`%s must be true or false (got "")`, name)
		}
	}
	if err == nil {
		err = documentFilter(c, &f)
	}
	if err != nil {
		httpserver.WriteBadRequest(c, err.Error())
		return
	}
	limit, ok := httpserver.QueryLimit(c, LimitDefault, LimitMax)
	if !ok {
		return
	}
	k, ok := httpserver.QueryCursor(c)
	if !ok {
		return
	}
	var after *Cursor
	if k != nil {
		after = &Cursor{CreatedAt: k.CreatedAt, ID: k.ID}
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	entries, err := h.Repository.List(ctx, f, after, limit+1)
	if err != nil {
		h.fail(c, "list dead letters", err)
		return
	}
	resp := listResponse{Entries: entries}
	if len(entries) > limit {
		entries = entries[:limit]
		last := entries[len(entries)-1]
		next := httpserver.EncodeCursor(httpserver.Keyset{CreatedAt: last.CreatedAt, ID: last.ID})
		resp.Entries, resp.NextCursor = entries, &next
	}
	if resp.Entries == nil {
		resp.Entries = []domain.DeadLetterEntry{}
	}
	c.JSON(http.StatusOK, resp)
}

func (h *routes) stats(c *gin.Context) {
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	s, err := h.Repository.GetStats(ctx)
	if err != nil {
		h.fail(c, "dead letter stats", err)
		return
	}
	c.JSON(http.StatusOK, s)
}

// entryID reads the :id of a route on one entry, answering 400 when it is
// not a UUID.
func entryID(c *gin.Context) (string, bool) {
	id := c.Param("id")
	if !httpserver.IsUUID(id) {
		httpserver.WriteBadRequest(c, "id must be a UUID")
		return "", false
	}
	return id, true
}

func (h *routes) requeueOne(c *gin.Context) {
	id, ok := entryID(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	var permanent *PermanentError
	switch err := h.Repository.Requeue(ctx, id); {
	case errors.As(err, &permanent):
		h.Logger.InfoContext(ctx, "dead letter retry refused: its error is permanent", "dlq_id", id, "error_code", permanent.Code, "by", auth.Subject(c))
		httpserver.WriteError(c, http.StatusConflict, httpserver.CodeConflict, permanent.Error())
		return
	case err != nil:
		h.fail(c, "requeue dead letter", err)
		return
	}
	h.Logger.InfoContext(ctx, "dead letter requeued", "dlq_id", id, "by", auth.Subject(c))
	c.JSON(http.StatusOK, gin.H{"requeued": 1})
}

// GET /dlq/:id/attempts: the entry's attempts (each failure of its
// document: when, code, message), oldest first.
func (h *routes) attempts(c *gin.Context) {
	id, ok := entryID(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	attempts, err := h.Repository.Attempts(ctx, id)
	if err != nil {
		h.fail(c, "dead letter attempts", err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "attempts": attempts, "kept": AttemptsKept})
}

// filterBody is the body of POST /dlq/requeue and POST /dlq/delete: every
// entry matching all given fields is acted on. At least one filter, or
// "all": true, is required, so that an empty or null body never acts on
// everything.
type filterBody struct {
	Source string `json:"source"`
	// NoSource selects the entries recorded without a source name.
	NoSource  bool   `json:"no_source"`
	ErrorCode string `json:"error_code"`
	// Index is the exact raw index (GET /dlq's index filter): the entries
	// a source's dead-letter count counts, nameless ones included.
	Index     string `json:"index"`
	Exhausted *bool  `json:"exhausted"`
	Permanent *bool  `json:"permanent"`
	All       bool   `json:"all"`
}

// bulkFilter reads the body of a bulk route whose action (re-queue,
// delete) names what "all" does, answering 400 when it is not valid.
func bulkFilter(c *gin.Context, action string) (Filter, bool, bool) {
	var body filterBody
	if !httpserver.DecodeJSON(c, &body) {
		return Filter{}, false, false
	}
	hasFilter := strings.TrimSpace(body.Source) != "" || body.NoSource || strings.TrimSpace(body.ErrorCode) != "" || body.Index != "" ||
		body.Exhausted != nil || body.Permanent != nil
	switch {
	case body.All && hasFilter:
		httpserver.WriteBadRequest(c, fmt.Sprintf(`"all": true %ss every entry; send it without filters`, action))
		return Filter{}, false, false
	case !body.All && !hasFilter:
		httpserver.WriteBadRequest(c, fmt.Sprintf(`give a filter (source, no_source, error_code, index, exhausted, permanent) or "all": true to %s every entry`, action))
		return Filter{}, false, false
	}
	boolText := func(b *bool) string {
		if b == nil {
			return ""
		}
		return strconv.FormatBool(*b)
	}
	f, err := parseFilter(body.Source, strconv.FormatBool(body.NoSource), body.ErrorCode, boolText(body.Exhausted), boolText(body.Permanent))
	if n := utf8.RuneCountInString(body.Index); err == nil && n > maxIndexChars {
		err = fmt.Errorf("index must be at most %d characters (got %d)", maxIndexChars, n)
	}
	f.Index = body.Index
	if err != nil {
		httpserver.WriteBadRequest(c, err.Error())
		return Filter{}, false, false
	}
	return f, body.All, true
}

func (h *routes) requeueMatching(c *gin.Context) {
	f, all, ok := bulkFilter(c, "re-queue")
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	res, err := h.Repository.RequeueMatching(ctx, f)
	if err != nil {
		h.fail(c, "requeue dead letters", err)
		return
	}
	h.Logger.InfoContext(ctx, "dead letters requeued", "count", res.Requeued, "skipped_permanent", res.Skipped, "source", f.Source, "no_source", f.NoSource,
		"error_code", f.ErrorCode, "index", f.Index, "all", all, "by", auth.Subject(c))
	body := gin.H{"requeued": res.Requeued, "skipped": res.Skipped, "skipped_by_code": res.ByCode, "skipped_reason": nil}
	if res.Skipped > 0 {
		body["skipped_reason"] = fmt.Sprintf("%d matching entries were not re-queued: their error codes are permanent (%s), so a retry cannot succeed",
			res.Skipped, strings.Join(permanentCodes(), ", "))
	}
	c.JSON(http.StatusOK, body)
}

// deleteMatching deletes every entry matching the body's filter (POST
// /dlq/delete): the documents stay failed in Elasticsearch.
func (h *routes) deleteMatching(c *gin.Context) {
	f, all, ok := bulkFilter(c, "delete")
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	n, err := h.Repository.DeleteMatching(ctx, f)
	if err != nil {
		h.fail(c, "delete dead letters", err)
		return
	}
	h.Logger.InfoContext(ctx, "dead letters deleted", "count", n, "source", f.Source, "no_source", f.NoSource, "error_code", f.ErrorCode, "index", f.Index, "all", all, "by", auth.Subject(c))
	c.JSON(http.StatusOK, gin.H{"deleted": n})
}

func (h *routes) deleteOne(c *gin.Context) {
	id, ok := entryID(c)
	if !ok {
		return
	}
	ctx, cancel := httpserver.WithTimeout(c, h.DBTimeout)
	defer cancel()
	if err := h.Repository.Delete(ctx, id); err != nil {
		h.fail(c, "delete dead letter", err)
		return
	}
	h.Logger.InfoContext(ctx, "dead letter deleted", "dlq_id", id, "by", auth.Subject(c))
	c.Status(http.StatusNoContent)
}
