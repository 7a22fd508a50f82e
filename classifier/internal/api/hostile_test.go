package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/infrastructure/testenv"
)

// The OpenAPI check of every answer is real: the document's router finds
// the API's routes on the test server's URLs.
func TestOpenAPIRouterFindsRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(t, "GET", "/openapi.json", nil)
	if res.status != http.StatusOK {
		t.Fatalf("openapi.json: %d", res.status)
	}
	// An answer no operation documents (status 599) is refused only when
	// the document's router finds the operation; for a path it does not
	// find, any JSON error would pass.
	header := http.Header{"Content-Type": {"application/json"}}
	envelope := []byte(`{"error":{"code":"internal_error","message":"x"}}`)
	for _, p := range []string{"/rules", "/rules/1", "/dlq", "/sources/x", "/sources/poll-status"} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, b.url+p, nil)
		if err := document(t).CheckResponse(req, 599, header, envelope); err == nil {
			t.Errorf("the OpenAPI router does not find GET %s", p)
		}
	}
}

// NUL and invalid UTF-8 in parameters and bodies get 400, never a 5xx from
// Postgres; strict bodies refuse null and trailing data.
func TestHostileTextIs400(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct {
		method, path string
		body         any
		code         string
	}{
		{"GET", "/rules?topic=%00", nil, "invalid_text"},
		{"GET", "/rules?topic=%ff%fe", nil, "invalid_text"},
		{"GET", "/rules/%00", nil, "invalid_text"},
		{"GET", "/rules?enabled=", nil, "bad_request"},
		{"POST", "/rules", `{"name":"n\u0000","topic":"crime","keywords":["x"]}`, "invalid_text"},
		{"POST", "/rules", `{"name":"n","topic":"crime","keywords":["a\u0000b"]}`, "invalid_text"},
		{"POST", "/rules", "{\"name\":\"\xff\",\"topic\":\"crime\",\"keywords\":[\"x\"]}", "invalid_text"},
		{"POST", "/rules/test", `{"text":"\u0000"}`, "invalid_text"},
		{"POST", "/rules/test", `null`, "invalid_json"},
		{"POST", "/rules/test", `{"text":"gun"} trailing`, "invalid_json"},
	} {
		res := b.do(t, tt.method, tt.path, tt.body)
		if res.status != http.StatusBadRequest || res.errorCode() != tt.code {
			t.Errorf("%s %s %v: %d %s, want 400 %s", tt.method, tt.path, tt.body, res.status, res.body, tt.code)
		}
	}
}

// blockingMatcher holds every Match until released, so a test can fill the
// concurrency budget of /rules/test.
type blockingMatcher struct {
	entered chan struct{}
	release chan struct{}
}

func (m blockingMatcher) Match(string, string) []rules.Match {
	m.entered <- struct{}{}
	<-m.release
	return nil
}

type noPipeline struct{}

func (noPipeline) Classify(*domain.RawContent) (*domain.ClassifiedContent, error) {
	return &domain.ClassifiedContent{}, nil
}

// /rules/test and /classify have a bounded cost: a body over MaxTestBytes
// gets 413 and a request over MaxConcurrentTests gets 429 with
// Retry-After, while the admitted ones complete.
func TestCostlyRoutesAreBounded(t *testing.T) {
	t.Parallel()
	m := blockingMatcher{entered: make(chan struct{}, 2), release: make(chan struct{})}
	url, token := serve(t, api.Deps{Store: rulestore.NewRepository(nil), Engine: m, Pipeline: noPipeline{}, Logger: testenv.Logger(t),
		MaxTestBytes: 4 << 10, MaxConcurrentTests: 2})
	big := `{"text":"` + strings.Repeat("\ufdfa", 2<<10) + `"}`
	if res := do(t, url, token, "POST", "/rules/test", big); res.status != http.StatusRequestEntityTooLarge || res.errorCode() != "body_too_large" {
		t.Errorf("large /rules/test: %d %s, want 413", res.status, res.body)
	}
	if res := do(t, url, token, "POST", "/classify", `{"url":"https://x.example/a","raw_text":"`+strings.Repeat("a", 5<<10)+`"}`); res.status != http.StatusRequestEntityTooLarge {
		t.Errorf("large /classify: %d %s, want 413", res.status, res.body)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if res := do(t, url, token, "POST", "/rules/test", `{"text":"gun"}`); res.status != http.StatusOK {
				t.Errorf("admitted /rules/test: %d %s", res.status, res.body)
			}
		})
	}
	<-m.entered
	<-m.entered
	for _, path := range []string{"/rules/test", "/classify"} {
		res := do(t, url, token, "POST", path, `{"text":"gun"}`)
		if res.status != http.StatusTooManyRequests || res.errorCode() != "too_many_requests" {
			t.Errorf("%s over the concurrency limit: %d %s, want 429", path, res.status, res.body)
		}
	}
	close(m.release)
	wg.Wait()
}

// A rule that would take the enabled set over the cost budget is a 400
// with the reason; a keyword that expands under normalization is measured
// as it expands.
func TestRuleOverBudgetIs400(t *testing.T) {
	t.Parallel()
	b := setup(t)
	kws := make([]string, 500)
	for i := range kws {
		kws[i] = fmt.Sprintf("k%03d%s", i, strings.Repeat("x", 90))
	}
	res := b.do(t, "POST", "/rules", map[string]any{"name": "huge", "topic": "wildlife", "keywords": kws})
	if res.status != http.StatusBadRequest || res.errorCode() != "invalid_rule" || !strings.Contains(res.errorMessage(), "over budget") {
		t.Errorf("over-budget rule: %d %s", res.status, res.body)
	}
	res = b.do(t, "POST", "/rules", map[string]any{"name": "expanding", "topic": "wildlife",
		"keywords": []string{"aa" + strings.Repeat("\ufdfa", 98)}})
	if res.status != http.StatusBadRequest || !strings.Contains(res.errorMessage(), "bytes once normalized") {
		t.Errorf("expanding keyword: %d %s", res.status, res.body)
	}
}
