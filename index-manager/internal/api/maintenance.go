package api

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/index-manager/internal/audit"
	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/infrastructure/contentindex"
)

// Index maintenance: aliases and force merges (admin routes, audited).

// aliasPattern is what an alias name may be: the characters of a source
// name, so it needs no escaping anywhere and holds no pattern syntax.
var aliasPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,199}$`)

// ValidateAliasName accepts an alias name that cannot be mistaken for a
// content index: the classifier, the publisher's sweeps and the rate
// sampler read every index matching *_raw_content and *_classified_content,
// and Elasticsearch expands such a pattern over aliases too, so an alias
// with a content name would make them read its index twice.
func ValidateAliasName(alias string) error {
	if !aliasPattern.MatchString(alias) {
		return invalid("alias must be 1 to 200 lowercase letters, digits, _ and -, starting with a letter or digit")
	}
	if strings.HasSuffix(alias, contentindex.RawSuffix) || strings.HasSuffix(alias, contentindex.ClassifiedSuffix) {
		return invalid("alias must not end in %s or %s: the pipeline reads every index (and alias) of those patterns, so it would read the index twice",
			contentindex.RawSuffix, contentindex.ClassifiedSuffix)
	}
	return nil
}

// AliasListResponse answers GET /api/v1/aliases.
type AliasListResponse struct {
	Aliases []indices.Alias `json:"aliases"`
	Total   int             `json:"total"`
}

// AliasResponse answers a change of an alias.
type AliasResponse struct {
	Acknowledged bool   `json:"acknowledged"`
	Index        string `json:"index"`
	Alias        string `json:"alias"`
}

func (h *Handler) listAliases(c *gin.Context) {
	aliases, err := h.store.Aliases(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, AliasListResponse{Aliases: aliases, Total: len(aliases)})
}

// aliasTarget validates the index and alias of an alias route.
func (h *Handler) aliasTarget(c *gin.Context) (index, alias string, ok bool) {
	index, alias = c.Param("name"), c.Param("alias")
	if err := h.checkMutable(index); err != nil {
		h.fail(c, err)
		return "", "", false
	}
	if err := ValidateAliasName(alias); err != nil {
		h.fail(c, err)
		return "", "", false
	}
	return index, alias, true
}

func (h *Handler) putAlias(c *gin.Context) {
	index, alias, ok := h.aliasTarget(c)
	if !ok {
		return
	}
	err := h.audited(c, audit.ActionAlias, index, map[string]any{"alias": alias}, func(ctx context.Context) error {
		return h.store.PutAlias(ctx, index, alias)
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, AliasResponse{Acknowledged: true, Index: index, Alias: alias})
}

func (h *Handler) deleteAlias(c *gin.Context) {
	index, alias, ok := h.aliasTarget(c)
	if !ok {
		return
	}
	err := h.audited(c, audit.ActionUnalias, index, map[string]any{"alias": alias}, func(ctx context.Context) error {
		return h.store.DeleteAlias(ctx, index, alias)
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, AliasResponse{Acknowledged: true, Index: index, Alias: alias})
}

// ForceMergeRequest is the optional body of POST
// /api/v1/indices/:name/_forcemerge.
type ForceMergeRequest struct {
	// OnlyExpungeDeletes is the only merge offered, and the default.
	OnlyExpungeDeletes *bool `json:"only_expunge_deletes"`
	// MaxNumSegments is refused: see forceMerge.
	MaxNumSegments *int `json:"max_num_segments"`
}

// ForceMergeResponse answers a force merge started in the background.
type ForceMergeResponse struct {
	Acknowledged bool   `json:"acknowledged"`
	Index        string `json:"index"`
	// Task is the id GET /api/v1/tasks/:task follows.
	Task string `json:"task"`
	// DeletedDocs is what the index held before the merge.
	DeletedDocs int64 `json:"deleted_docs"`
}

// forceMerge starts a merge that expunges an index's deleted documents, in
// the background (202 with the task to follow). Merging down to a number of
// segments is refused: the content indices are written continuously, and
// Elasticsearch's own guidance is to merge that way only indices no longer
// written (the large segments it makes are not merged again until they are
// mostly deleted). One merge per index at a time: another gets 409.
func (h *Handler) forceMerge(c *gin.Context) {
	index := c.Param("name")
	if err := h.checkMutable(index); err != nil {
		h.fail(c, err)
		return
	}
	var req ForceMergeRequest
	if c.Request.ContentLength != 0 && !h.bindJSON(c, &req) {
		return
	}
	if req.MaxNumSegments != nil {
		h.fail(c, invalid("max_num_segments is refused: the content indices are still written, and a merge to a few segments leaves segments too large to be merged again; only_expunge_deletes reclaims the deleted documents"))
		return
	}
	if req.OnlyExpungeDeletes != nil && !*req.OnlyExpungeDeletes {
		h.fail(c, invalid("only_expunge_deletes must be true (the only merge offered)"))
		return
	}
	var res ForceMergeResponse
	err := h.audited(c, audit.ActionForceMerge, index, map[string]any{"only_expunge_deletes": true}, func(ctx context.Context) error {
		running, err := h.store.ForceMergeRunning(ctx, index)
		if err != nil {
			return err
		}
		if running {
			return &indices.Error{Op: "force merge", Kind: indices.ErrConflict, Reason: fmt.Sprintf("a force merge of %s is already running", index)}
		}
		deleted, err := h.store.DeletedDocs(ctx, index)
		if err != nil {
			return err
		}
		task, err := h.store.StartForceMerge(ctx, index, indices.ForceMerge{OnlyExpungeDeletes: true})
		if err != nil {
			return err
		}
		res = ForceMergeResponse{Acknowledged: true, Index: index, Task: task, DeletedDocs: deleted}
		return nil
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, res)
}

// taskPattern is an Elasticsearch task id: node id, colon, number.
var taskPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}:[0-9]{1,19}$`)

// getTask answers the state of a task this API started (a force merge);
// any other task is 404, so the route does not list the cluster's work.
func (h *Handler) getTask(c *gin.Context) {
	id := c.Param("task")
	if !taskPattern.MatchString(id) {
		h.fail(c, invalid("task must be an Elasticsearch task id (node:number)"))
		return
	}
	st, err := h.store.Task(c.Request.Context(), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	if !strings.HasPrefix(st.Action, "indices:admin/forcemerge") {
		h.fail(c, &indices.Error{Op: "get task", Kind: indices.ErrNotFound, Reason: "no such force merge task"})
		return
	}
	c.JSON(http.StatusOK, st)
}
