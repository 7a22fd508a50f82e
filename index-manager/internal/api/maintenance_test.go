package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/index-manager/internal/audit"
	"github.com/north-cloud/infrastructure/esclient"
)

func TestValidateAliasName(t *testing.T) {
	t.Parallel()
	for alias, ok := range map[string]bool{
		"news-all": true, "reuters_v2": true, "a": true,
		"": false, "News": false, "_all": false, "-x": false, "a*": false, "a,b": false, "a/b": false,
		"x_raw_content": false, "x_classified_content": false, strings.Repeat("a", 201): false,
	} {
		if err := api.ValidateAliasName(alias); (err == nil) != ok {
			t.Errorf("ValidateAliasName(%q) = %v, want ok %v", alias, err, ok)
		}
	}
}

// TestAliasesAreChangedAndAudited: an admin points an alias at a content
// index and removes it, each change audited; content-shaped alias names and
// protected indices are refused before Elasticsearch is asked.
func TestAliasesAreChangedAndAudited(t *testing.T) {
	t.Parallel()
	b := setup(t, options{protected: []string{"{prefix}locked_raw_content"}})
	name := b.prefix + "alias_raw_content"
	b.createIndex(name)
	alias := strings.ReplaceAll(b.prefix, "_", "-") + "news-all"
	path := "/api/v1/indices/" + name + "/aliases/" + alias

	if r := b.do(request{Method: "PUT", Path: path}); r.Status != http.StatusOK {
		t.Fatalf("put alias: %d %s", r.Status, r.Body)
	}
	var list api.AliasListResponse
	b.do(request{Method: "GET", Path: "/api/v1/aliases"}).decode(t, &list)
	found := false
	for _, a := range list.Aliases {
		found = found || (a.Alias == alias && a.Index == name)
	}
	if !found {
		t.Fatalf("alias %s → %s not listed: %+v", alias, name, list.Aliases)
	}
	if r := b.do(request{Method: "DELETE", Path: path}); r.Status != http.StatusOK {
		t.Fatalf("delete alias: %d %s", r.Status, r.Body)
	}
	if r := b.do(request{Method: "DELETE", Path: path}); r.Status != http.StatusNotFound {
		t.Errorf("delete a missing alias: %d %s, want 404", r.Status, r.Body)
	}
	for _, bad := range []struct {
		path string
		want int
	}{
		{"/api/v1/indices/" + name + "/aliases/" + b.prefix + "x_raw_content", http.StatusBadRequest},
		{"/api/v1/indices/" + name + "/aliases/UPPER", http.StatusBadRequest},
		{"/api/v1/indices/" + b.prefix + "locked_raw_content/aliases/" + alias, http.StatusForbidden},
		{"/api/v1/indices/" + b.prefix + "nosuch_raw_content/aliases/" + alias, http.StatusNotFound},
	} {
		if r := b.do(request{Method: "PUT", Path: bad.path}); r.Status != bad.want {
			t.Errorf("PUT %s: %d %s, want %d", bad.path, r.Status, r.Body, bad.want)
		}
	}
	var actions []string
	for _, e := range b.auditEntries(name) {
		actions = append(actions, e.Action+"/"+e.Outcome)
	}
	got := strings.Join(actions, ",")
	for _, want := range []string{audit.ActionAlias + "/success", audit.ActionUnalias + "/success", audit.ActionUnalias + "/failure"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit log of %s = %s, want %s in it", name, got, want)
		}
	}
}

// TestForceMergeExpungesDeletedDocuments: a force merge started through the
// API runs in the background, its task is followed to the end, and the
// index holds no deleted documents afterwards; a merge to a number of
// segments is refused.
func TestForceMergeExpungesDeletedDocuments(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	name := b.prefix + "merge_raw_content"
	b.createIndex(name)
	b.indexDocs(name, 200)
	b.indexDocs(name, 150) // overwrites doc-0..doc-149: 150 deleted versions
	// Elasticsearch keeps deleted documents a merge may not drop while a
	// retention lease still holds their history (a fresh index's lease
	// advances on a background sync every 30 s or so); wait for that.
	b.waitHistoryReleased(name)
	path := "/api/v1/indices/" + name + "/_forcemerge"

	if r := b.do(request{Method: "POST", Path: path, Body: map[string]any{"max_num_segments": 1}}); r.Status != http.StatusBadRequest {
		t.Errorf("max_num_segments: %d %s, want 400", r.Status, r.Body)
	}
	r := b.do(request{Method: "POST", Path: path})
	if r.Status != http.StatusAccepted {
		t.Fatalf("force merge: %d %s", r.Status, r.Body)
	}
	var started api.ForceMergeResponse
	r.decode(t, &started)
	if started.Task == "" || started.DeletedDocs == 0 {
		t.Fatalf("force merge answer %+v: want a task and the deleted documents before it", started)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var st struct {
			Completed bool   `json:"completed"`
			Error     string `json:"error"`
		}
		tr := b.do(request{Method: "GET", Path: "/api/v1/tasks/" + started.Task})
		if tr.Status != http.StatusOK {
			t.Fatalf("task: %d %s", tr.Status, tr.Body)
		}
		tr.decode(t, &st)
		if st.Completed {
			if st.Error != "" {
				t.Fatalf("force merge failed: %s", st.Error)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("force merge task %s not completed within 2 minutes", started.Task)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.refreshDirect(name)
	if deleted := b.deletedDocs(name); deleted != 0 {
		t.Errorf("after the merge %s holds %d deleted documents, want 0", name, deleted)
	}
	if r := b.do(request{Method: "GET", Path: "/api/v1/tasks/not-a-task"}); r.Status != http.StatusBadRequest {
		t.Errorf("bad task id: %d %s, want 400", r.Status, r.Body)
	}
	if r := b.do(request{Method: "GET", Path: "/api/v1/tasks/nosuchnode:1"}); r.Status != http.StatusNotFound {
		t.Errorf("unknown task: %d %s, want 404", r.Status, r.Body)
	}
}

// waitHistoryReleased waits until every retention lease of name's shards
// retains no operation of the index's writes, so a merge may expunge.
func (b *bundle) waitHistoryReleased(name string) {
	b.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		res, err := b.es.Indices.Stats(b.es.Indices.Stats.WithIndex(name), b.es.Indices.Stats.WithLevel("shards"),
			b.es.Indices.Stats.WithFilterPath("**.seq_no.max_seq_no", "**.retention_leases.leases.retaining_seq_no"))
		if err := esclient.CheckResponse("stats "+name, res, err); err != nil {
			b.t.Fatal(err)
		}
		var body struct {
			Indices map[string]struct {
				Shards map[string][]struct {
					SeqNo struct {
						Max int64 `json:"max_seq_no"`
					} `json:"seq_no"`
					Leases struct {
						Leases []struct {
							Retaining int64 `json:"retaining_seq_no"`
						} `json:"leases"`
					} `json:"retention_leases"`
				} `json:"shards"`
			} `json:"indices"`
		}
		err = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if err != nil {
			b.t.Fatal(err)
		}
		released := true
		for _, shards := range body.Indices[name].Shards {
			for _, sh := range shards {
				for _, l := range sh.Leases.Leases {
					released = released && l.Retaining > sh.SeqNo.Max
				}
			}
		}
		if released {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the retention leases of %s still hold its history after 3 minutes", name)
		}
		time.Sleep(time.Second)
	}
}

// refreshDirect refreshes an index through Elasticsearch itself.
func (b *bundle) refreshDirect(name string) {
	b.t.Helper()
	res, err := b.es.Indices.Refresh(b.es.Indices.Refresh.WithIndex(name))
	if err := esclient.CheckResponse("refresh "+name, res, err); err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
}

// deletedDocs reads docs.deleted of an index from Elasticsearch itself.
func (b *bundle) deletedDocs(name string) int64 {
	b.t.Helper()
	res, err := b.es.Cat.Indices(b.es.Cat.Indices.WithIndex(name), b.es.Cat.Indices.WithH("docs.deleted"))
	if err := esclient.CheckResponse("cat "+name, res, err); err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(buf.String()), &n); err != nil {
		b.t.Fatalf("docs.deleted of %s: %q: %v", name, buf.String(), err)
	}
	return n
}
