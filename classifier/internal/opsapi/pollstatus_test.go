package opsapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/testenv"
)

// GET /sources/poll-status reports each raw index as the poller sees it,
// behind the token like every other route.
func TestPollStatusReportsEachIndex(t *testing.T) {
	t.Parallel()
	authn := authtest.New(t, "0123456789abcdef0123456789abcdef-test")
	token := authtest.Token(t, authn, "operator@example.org", auth.RoleOperator)
	since := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	statuses := []poller.IndexStatus{
		{Index: "alpha_raw_content", Since: since},
		{Index: "beta_raw_content", Failing: true, ReasonCode: poller.ReasonWriteBlocked,
			Reason: "claims refused (3 of 3, status 403): cluster_block_exception: index [beta_raw_content] blocked by: [FORBIDDEN/8/index write (api)];",
			Since:  since, NextRetry: since.Add(10 * time.Second), Failures: 2},
	}
	gin.SetMode(gin.ReleaseMode)
	serve := func(d Deps, path, bearer string) *httptest.ResponseRecorder {
		router := gin.New()
		d.Logger = testenv.Logger(t)
		if err := Register(router.Group("/api/v1", authn.Middleware(auth.Policy{})), d); err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		w := httptest.NewRecorder()
		router.ServeHTTP(w, req)
		return w
	}

	w := serve(Deps{PollStatus: func() []poller.IndexStatus { return statuses }}, "/api/v1/sources/poll-status", token)
	if w.Code != http.StatusOK {
		t.Fatalf("GET poll-status = %d %s", w.Code, w.Body)
	}
	var body struct {
		Indices []map[string]any `json:"indices"`
		Failing int              `json:"failing"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Failing != 1 || len(body.Indices) != 2 {
		t.Fatalf("body %s: want 2 indices, 1 failing", w.Body)
	}
	alpha, beta := body.Indices[0], body.Indices[1]
	if alpha["index"] != "alpha_raw_content" || alpha["failing"] != false || alpha["next_retry"] != nil || alpha["reason"] != nil {
		t.Errorf("healthy index = %v", alpha)
	}
	if beta["failing"] != true || beta["reason_code"] != "write_blocked" || beta["next_retry"] != "2026-11-26T03:00:10Z" ||
		beta["since"] != "2026-11-26T03:00:00Z" || beta["consecutive_failures"] != float64(2) || beta["reason"] == "" {
		t.Errorf("failing index = %v", beta)
	}

	if w := serve(Deps{PollStatus: func() []poller.IndexStatus { return nil }}, "/api/v1/sources/poll-status", token); w.Code != 200 ||
		w.Body.String() != `{"indices":[],"failing":0}` {
		t.Errorf("no indices yet: %d %s", w.Code, w.Body)
	}
	if w := serve(Deps{}, "/api/v1/sources/poll-status", token); w.Code != http.StatusServiceUnavailable {
		t.Errorf("without a poller: %d %s, want 503", w.Code, w.Body)
	}
	if w := serve(Deps{PollStatus: func() []poller.IndexStatus { return statuses }}, "/api/v1/sources/poll-status", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", w.Code)
	}
}
