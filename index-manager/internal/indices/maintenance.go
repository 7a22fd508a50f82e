package indices

import (
	"context"
	"net/url"
	"sort"
	"strings"

	"github.com/elastic/go-elasticsearch/v8/esapi"
)

// Alias is one alias of a content index.
type Alias struct {
	Alias string `json:"alias"`
	Index string `json:"index"`
}

// Aliases lists the aliases of the content indices, sorted by alias, then
// index.
func (s *Store) Aliases(ctx context.Context) ([]Alias, error) {
	const op = "list aliases"
	res, err := s.do(ctx, op, esapi.IndicesGetAliasRequest{
		Index:             ContentPatterns,
		AllowNoIndices:    boolPtr(true),
		IgnoreUnavailable: boolPtr(true),
	})
	if err != nil {
		return nil, err
	}
	var body map[string]struct {
		Aliases map[string]any `json:"aliases"`
	}
	if err := decode(op, res, &body); err != nil {
		return nil, err
	}
	out := []Alias{}
	for index, a := range body {
		for alias := range a.Aliases {
			out = append(out, Alias{Alias: alias, Index: index})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Alias != out[j].Alias {
			return out[i].Alias < out[j].Alias
		}
		return out[i].Index < out[j].Index
	})
	return out, nil
}

// PutAlias points alias at the one concrete index name (adding to the
// indices it already names).
func (s *Store) PutAlias(ctx context.Context, index, alias string) error {
	return s.exec(ctx, "put alias", esapi.IndicesPutAliasRequest{Index: []string{index}, Name: alias})
}

// DeleteAlias removes alias from the one concrete index name; an alias the
// index does not carry is ErrNotFound.
func (s *Store) DeleteAlias(ctx context.Context, index, alias string) error {
	return s.exec(ctx, "delete alias", esapi.IndicesDeleteAliasRequest{Index: []string{index}, Name: []string{alias}})
}

// ForceMerge is what a force merge does: expunge the deleted documents
// only, or merge down to MaxSegments segments per shard.
type ForceMerge struct {
	OnlyExpungeDeletes bool
	MaxSegments        int
}

// forceMergeAction is the task action of a force merge.
const forceMergeAction = "indices:admin/forcemerge"

// StartForceMerge starts a force merge of one index in the background and
// returns its task id; Task tells when it is done. It flushes the index
// first: a merge keeps the deleted documents whose history the last commit
// still had to retain (soft deletes), so without a fresh commit a first
// merge after a burst of updates expunges nothing.
func (s *Store) StartForceMerge(ctx context.Context, index string, fm ForceMerge) (string, error) {
	const op = "force merge"
	flushed, err := s.do(ctx, op, esapi.IndicesFlushRequest{Index: []string{index}, ExpandWildcards: "none", AllowNoIndices: boolPtr(false)})
	if err != nil {
		return "", err
	}
	discard(flushed)
	req := esapi.IndicesForcemergeRequest{
		Index:             []string{index},
		ExpandWildcards:   "none",
		AllowNoIndices:    boolPtr(false),
		Flush:             boolPtr(true),
		WaitForCompletion: boolPtr(false),
	}
	if fm.OnlyExpungeDeletes {
		req.OnlyExpungeDeletes = boolPtr(true)
	} else {
		req.MaxNumSegments = &fm.MaxSegments
	}
	res, err := s.do(ctx, op, req)
	if err != nil {
		return "", err
	}
	var body struct {
		Task string `json:"task"`
	}
	if err := decode(op, res, &body); err != nil {
		return "", err
	}
	if body.Task == "" {
		return "", &Error{Op: op, Kind: ErrUpstream, Reason: "elasticsearch answered without a task id"}
	}
	return body.Task, nil
}

// TaskStatus is the state of a background task.
type TaskStatus struct {
	Task      string `json:"task"`
	Action    string `json:"action"`
	Completed bool   `json:"completed"`
	// RunningMs is how long it has run (until it completed).
	RunningMs int64 `json:"running_ms"`
	// Error is the task's failure, if it failed.
	Error string `json:"error,omitempty"`
}

// Task returns the state of a background task by id ("node:number").
func (s *Store) Task(ctx context.Context, id string) (TaskStatus, error) {
	const op = "get task"
	res, err := s.do(ctx, op, esapi.TasksGetRequest{TaskID: url.PathEscape(id)})
	if err != nil {
		return TaskStatus{}, err
	}
	var body struct {
		Completed bool `json:"completed"`
		Task      struct {
			Action          string `json:"action"`
			RunningTimeNano int64  `json:"running_time_in_nanos"`
		} `json:"task"`
		Error *struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
	}
	if err := decode(op, res, &body); err != nil {
		return TaskStatus{}, err
	}
	st := TaskStatus{Task: id, Action: body.Task.Action, Completed: body.Completed, RunningMs: body.Task.RunningTimeNano / 1e6}
	if body.Error != nil {
		st.Error = strings.TrimSpace(body.Error.Type + ": " + body.Error.Reason)
	}
	return st, nil
}

// ForceMergeRunning reports whether a force merge of index is running,
// from the descriptions of the cluster's force merge tasks.
func (s *Store) ForceMergeRunning(ctx context.Context, index string) (bool, error) {
	const op = "list force merges"
	res, err := s.do(ctx, op, esapi.TasksListRequest{Actions: []string{forceMergeAction + "*"}, Detailed: boolPtr(true)})
	if err != nil {
		return false, err
	}
	var body struct {
		Nodes map[string]struct {
			Tasks map[string]struct {
				Description string `json:"description"`
			} `json:"tasks"`
		} `json:"nodes"`
	}
	if err := decode(op, res, &body); err != nil {
		return false, err
	}
	for _, n := range body.Nodes {
		for _, t := range n.Tasks {
			if mentionsIndex(t.Description, index) {
				return true, nil
			}
		}
	}
	return false, nil
}

// mentionsIndex reports whether a task description ("Force-merge
// indices [a, b], maxSegments[-1], ...") names index.
func mentionsIndex(description, index string) bool {
	start := strings.Index(description, "[")
	end := strings.Index(description, "]")
	if start < 0 || end < start {
		return false
	}
	for _, n := range strings.Split(description[start+1:end], ",") {
		if strings.TrimSpace(n) == index {
			return true
		}
	}
	return false
}

// DeletedDocs returns how many deleted documents an index still holds (what
// an expunging force merge removes).
func (s *Store) DeletedDocs(ctx context.Context, index string) (int64, error) {
	row, err := s.one(ctx, "count deleted documents", index)
	if err != nil {
		return 0, err
	}
	return num(row.DocsDeleted), nil
}
