package modelapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/labels"
	"github.com/north-cloud/classifier/internal/modelapi"
	"github.com/north-cloud/classifier/internal/modelstore"
	"github.com/north-cloud/infrastructure/testenv"
)

func router(t *testing.T, deps modelapi.Deps) *gin.Engine {
	t.Helper()
	gin.SetMode(gin.TestMode)
	r := gin.New()
	if deps.Store == nil {
		db, _ := dbtest.Migrated(t)
		deps.Store = modelstore.NewRepository(db)
	}
	deps.Logger = testenv.Logger(t)
	if err := modelapi.Register(r.Group("/api/v1"), deps); err != nil {
		t.Fatal(err)
	}
	return r
}

func do(t *testing.T, r http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
	if strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	var out map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	return w.Code, out
}

// labelled writes n documents per topic of our own invented text.
func labelled(n int) string {
	words := map[string][]string{
		"sports":   {"striker", "goal", "coach", "league", "referee"},
		"business": {"shares", "profit", "investors", "merger", "revenue"},
	}
	var b strings.Builder
	for topic, ws := range words {
		for i := range n {
			fmt.Fprintf(&b, `{"id":"%s-%d","label":"%s","title":"%s %s","text":"the %s and the %s today"}`+"\n",
				topic, i, topic, ws[i%5], ws[(i+1)%5], ws[(i+2)%5], ws[(i+3)%5])
		}
	}
	return b.String()
}

func TestTrainShadowPromoteRollbackOverHTTP(t *testing.T) {
	t.Parallel()
	r := router(t, modelapi.Deps{})
	code, m := do(t, r, http.MethodPost, "/api/v1/models/train?name=news", labelled(20))
	if code != http.StatusCreated || m["status"] != "inactive" || m["terms"].(float64) < 5 {
		t.Fatalf("train: %d %v", code, m)
	}
	id := int64(m["id"].(float64))
	if code, m = do(t, r, http.MethodPost, fmt.Sprintf("/api/v1/models/%d/candidate", id), `{"rollout_percent": 25}`); code != http.StatusOK ||
		m["status"] != "candidate" || m["rollout_percent"].(float64) != 25 {
		t.Fatalf("candidate: %d %v", code, m)
	}
	if code, m = do(t, r, http.MethodPost, fmt.Sprintf("/api/v1/models/%d/promote", id), ""); code != http.StatusOK || m["status"] != "active" {
		t.Fatalf("promote: %d %v", code, m)
	}
	if code, m = do(t, r, http.MethodDelete, fmt.Sprintf("/api/v1/models/%d", id), ""); code != http.StatusConflict {
		t.Fatalf("delete the active model: %d %v", code, m)
	}
	if code, m = do(t, r, http.MethodPost, "/api/v1/models/rollback", ""); code != http.StatusOK || m["active"] != nil {
		t.Fatalf("rollback: %d %v", code, m)
	}
	if code, _ = do(t, r, http.MethodPost, "/api/v1/models/rollback", ""); code != http.StatusNotFound {
		t.Fatalf("rollback with nothing active: %d", code)
	}
	if code, m = do(t, r, http.MethodGet, "/api/v1/models", ""); code != http.StatusOK || len(m["models"].([]any)) != 1 {
		t.Fatalf("list: %d %v", code, m)
	}
	if code, _ = do(t, r, http.MethodDelete, fmt.Sprintf("/api/v1/models/%d", id), ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _ = do(t, r, http.MethodGet, fmt.Sprintf("/api/v1/models/%d", id), ""); code != http.StatusNotFound {
		t.Fatalf("get deleted: %d", code)
	}
}

// POST /models/train?from=labels trains on the operators' stored labels.
func TestTrainFromLabels(t *testing.T) {
	t.Parallel()
	db, _ := dbtest.Migrated(t)
	store := labels.NewStore(db)
	r := router(t, modelapi.Deps{Store: modelstore.NewRepository(db), Labels: store})
	if code, m := do(t, r, http.MethodPost, "/api/v1/models/train?name=from-labels&from=labels", ""); code != http.StatusBadRequest {
		t.Fatalf("no labels yet: %d %v, want 400", code, m)
	}
	words := map[string]string{"sports": "striker goal league coach", "business": "shares profit merger investors"}
	for topic, w := range words {
		for i := range 4 {
			if _, _, err := store.Put(t.Context(), labels.Label{Index: "x_raw_content", ContentID: fmt.Sprint(topic, i), Label: topic,
				Title: strings.Fields(w)[i], Body: w}); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, m := do(t, r, http.MethodPost, "/api/v1/models/train?name=from-labels&from=labels", "")
	if code != http.StatusCreated || m["trained_on"].(map[string]any)["via"] != "labels" || m["trained_on"].(map[string]any)["documents"].(float64) != 8 {
		t.Fatalf("train from labels: %d %v", code, m)
	}
	if code, _ := do(t, r, http.MethodPost, "/api/v1/models/train?name=x&from=elsewhere", ""); code != http.StatusBadRequest {
		t.Errorf("from=elsewhere: %d", code)
	}
}

// Bad input gets a clear 4xx, never a 5xx.
func TestBadRequestsAre4xx(t *testing.T) {
	t.Parallel()
	r := router(t, modelapi.Deps{MaxTrainBytes: 4 << 10})
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPost, "/api/v1/models/train", labelled(3), http.StatusBadRequest},                        // no name
		{http.MethodPost, "/api/v1/models/train?name=x", "not json\n", http.StatusBadRequest},                // not NDJSON
		{http.MethodPost, "/api/v1/models/train?name=x", `{"label":"a","title":"t"}`, http.StatusBadRequest}, // one topic, one document
		{http.MethodPost, "/api/v1/models/train?name=x", "", http.StatusBadRequest},                          // nothing
		{http.MethodPost, "/api/v1/models/train?name=x", `{"title":"no label"}`, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/models/train?name=x", labelled(40), http.StatusRequestEntityTooLarge},
		{http.MethodPost, "/api/v1/models/abc/promote", "", http.StatusBadRequest},
		{http.MethodPost, "/api/v1/models/0/promote", "", http.StatusBadRequest},
		{http.MethodPost, "/api/v1/models/12345/promote", "", http.StatusNotFound},
		{http.MethodPost, "/api/v1/models/12345/candidate", `{"rollout_percent": 101}`, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/models/12345/candidate", `{"rollout_percent": "x"}`, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/models/12345/candidate", `{"other": 1}`, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/models/12345/candidate", ``, http.StatusNotFound},
		{http.MethodDelete, "/api/v1/models/candidate", "", http.StatusNotFound},
		{http.MethodDelete, "/api/v1/models/12345", "", http.StatusNotFound},
	} {
		if code, body := do(t, r, c.method, c.path, c.body); code != c.want {
			t.Errorf("%s %s %.40q: %d %v, want %d", c.method, c.path, c.body, code, body, c.want)
		}
	}
}
