package api_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"github.com/north-cloud/classifier/internal/dbtest"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/openapi"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/httpserver"
	infraopenapi "github.com/north-cloud/infrastructure/openapi"
	"github.com/north-cloud/infrastructure/testenv"
)

const testSecret = "0123456789abcdef0123456789abcdef-test"

// bundle is the API under test, served as main.go serves it (the shared
// HTTP server, the JWT-guarded /api/v1 group), over a fresh migrated
// database with the default rules, a live engine kept in sync by a Watcher,
// and the real pipeline.
type bundle struct {
	url     string
	token   string
	repo    *rulestore.Repository
	db      *sql.DB
	engine  *rules.Engine
	watcher *rulestore.Watcher
}

func setup(t testing.TB) bundle {
	t.Helper()
	db, dsn := dbtest.Migrated(t)
	log := testenv.Logger(t)
	repo := rulestore.NewRepository(db)
	engine, err := rules.NewEngine(rules.MatcherTokenIndex, nil)
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := rulestore.NewWatcher(rulestore.WatcherConfig{DatabaseURL: dsn}, repo, engine, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := watcher.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = watcher.Stop(ctx)
	})
	pipe, err := pipeline.New(pipeline.Config{Topics: engine})
	if err != nil {
		t.Fatal(err)
	}
	url, token := serve(t, api.Deps{Store: repo, Engine: engine, Pipeline: pipe, RulesVersion: watcher.Version, Logger: log})
	return bundle{url: url, token: token, repo: repo, db: db, engine: engine, watcher: watcher}
}

// serve mounts the API as main.go does and returns its base URL and a valid
// token.
func serve(t testing.TB, deps api.Deps) (string, string) {
	t.Helper()
	log := testenv.Logger(t)
	authn := authtest.New(t, testSecret)
	srv, err := httpserver.New(httpserver.Config{Addr: ":0", ServiceName: "classifier"}, log, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	v1 := srv.Router().Group("/api/v1", authn.Middleware(auth.Policy{}))
	if err := api.Register(v1, deps); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Router())
	t.Cleanup(ts.Close)
	return ts.URL + "/api/v1", authtest.Token(t, authn, "test-operator", auth.RoleOperator)
}

type response struct {
	status int
	body   []byte
}

// errorCode returns the code of a JSON error response.
func (r response) errorCode() string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}

func (r response) errorMessage() string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Message
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// do sends a request with the bundle's token; body is marshalled unless it
// is a string (sent raw).
func do(t testing.TB, base, token, method, path string, body any) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, req, res, raw)
	return response{status: res.StatusCode, body: raw}
}

var (
	docOnce sync.Once
	doc     *infraopenapi.Document
	docErr  error
)

// document returns the served OpenAPI document, loaded once for all tests.
func document(t testing.TB) *infraopenapi.Document {
	t.Helper()
	docOnce.Do(func() { doc, docErr = openapi.Load() })
	if docErr != nil {
		t.Fatal(docErr)
	}
	return doc
}

// validate checks a real answer against the served OpenAPI document: its
// status is documented for the route and its body matches the schema. An
// answer of no documented route must still be the JSON error shape.
func validate(t testing.TB, req *http.Request, res *http.Response, body []byte) {
	t.Helper()
	if err := document(t).CheckResponse(req, res.StatusCode, res.Header, body); err != nil {
		t.Fatal(err)
	}
}

func (b bundle) do(t testing.TB, method, path string, body any) response {
	t.Helper()
	return do(t, b.url, b.token, method, path, body)
}
