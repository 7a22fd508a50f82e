package openapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/north-cloud/infrastructure/openapi"
)

func load(t *testing.T) *openapi.Document {
	t.Helper()
	raw, err := os.ReadFile("testdata/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestLoadRefusesInvalidDocuments(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"not yaml":                     "openapi: [3.0.3",
		"response without description": "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /x:\n    get:\n      responses:\n        '200': {}\n",
		"no info":                      "openapi: 3.0.3\npaths: {}\n",
		"dangling reference":           "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /x:\n    get:\n      responses:\n        '200': {$ref: '#/components/responses/Missing'}\n",
	} {
		if _, err := openapi.Load([]byte(doc)); err == nil {
			t.Errorf("%s: loaded, want an error", name)
		}
	}
}

// The document is served as JSON that reads back as the same OpenAPI
// document.
func TestServeHTTP(t *testing.T) {
	t.Parallel()
	doc := load(t)
	srv := httptest.NewServer(doc)
	t.Cleanup(srv.Close)
	res, err := http.Get(srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("served %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if string(body) != string(doc.JSON()) {
		t.Fatalf("served body differs from JSON()")
	}
	var got struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.OpenAPI != "3.0.3" || len(got.Paths) != 1 || got.Paths["/api/v1/items/{id}"] == nil {
		t.Fatalf("served openapi %q with paths %v", got.OpenAPI, got.Paths)
	}
	if _, err := openapi.Load(body); err != nil {
		t.Fatalf("served JSON does not load back: %v", err)
	}
}

// answer is what the test server sends for one path.
type answer struct {
	status      int
	contentType string
	body        string
}

// TestCheckResponse sends real requests to a real server and checks each
// answer it gets, the way the services' API tests do.
func TestCheckResponse(t *testing.T) {
	t.Parallel()
	doc := load(t)
	answers := map[string]answer{
		"/api/v1/items/good":         {200, "application/json; charset=utf-8", `{"id":"good","count":3}`},
		"/api/v1/items/extra-field":  {200, "application/json", `{"id":"x","count":3,"secret":"y"}`},
		"/api/v1/items/negative":     {200, "application/json", `{"id":"x","count":-1}`},
		"/api/v1/items/missing":      {404, "application/json", `{"error":{"code":"not_found","message":"no such item"}}`},
		"/api/v1/items/undocumented": {500, "application/json", `{"error":{"code":"internal_error","message":"boom"}}`},
		"/api/v1/items/text":         {200, "text/plain", `{"id":"x","count":1}`},
		"/api/v1/items/not-json":     {200, "application/json", `{"id":`},
		"/api/v1/nowhere":            {404, "application/json", `{"error":{"code":"not_found","message":"no route"}}`},
		"/api/v1/nowhere/no-message": {404, "application/json", `{"error":{"code":"not_found"}}`},
		"/api/v1/nowhere/not-error":  {404, "application/json", `{"id":"x"}`},
		"/api/v1/nowhere/html":       {404, "text/html", `<h1>404</h1>`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		a := answers[r.URL.Path]
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	cases := []struct {
		method, path string
		wantErr      string // "" when the answer conforms
	}{
		{"GET", "/api/v1/items/good", ""},
		{"GET", "/api/v1/items/extra-field", "does not match"},
		{"GET", "/api/v1/items/negative", "does not match"},
		{"GET", "/api/v1/items/missing", ""},
		{"GET", "/api/v1/items/undocumented", "does not match"},
		{"GET", "/api/v1/items/text", "content type"},
		{"GET", "/api/v1/items/not-json", "does not match"},
		{"GET", "/api/v1/nowhere", ""},
		{"GET", "/api/v1/nowhere/no-message", "not a JSON error"},
		{"GET", "/api/v1/nowhere/not-error", "not a JSON error"},
		{"GET", "/api/v1/nowhere/html", "content type"},
		{"DELETE", "/api/v1/items/x", ""},
	}
	for _, c := range cases {
		t.Run(c.method+c.path, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(`{"sent":"a body"}`))
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			err = doc.CheckResponse(req, res.StatusCode, res.Header, body)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("conforming answer refused: %v", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("answer %d %s accepted, want an error about %q", res.StatusCode, body, c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("error %q does not say %q", err, c.wantErr)
			}
		})
	}
}

// A 204 with a body cannot cross a real connection (net/http refuses to
// write it), but a handler served through httptest.ResponseRecorder can
// produce one.
func TestCheckResponseRefuses204WithBody(t *testing.T) {
	t.Parallel()
	doc := load(t)
	rec := httptest.NewRecorder()
	rec.WriteHeader(http.StatusNoContent)
	_, _ = rec.WriteString(`{}`)
	req := httptest.NewRequest("DELETE", "http://localhost/api/v1/items/a", nil)
	err := doc.CheckResponse(req, rec.Code, rec.Header(), rec.Body.Bytes())
	if err == nil || !strings.Contains(err.Error(), "has a body") {
		t.Fatalf("204 with a body: %v, want an error saying it has a body", err)
	}
}

// One document checks answers from many goroutines at once, as parallel
// API tests sharing it do; -race watches the lazily built router.
func TestCheckResponseConcurrently(t *testing.T) {
	t.Parallel()
	doc := load(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			req := httptest.NewRequest("GET", "http://localhost/api/v1/items/a", nil)
			h := http.Header{"Content-Type": {"application/json"}}
			errs <- doc.CheckResponse(req, 200, h, []byte(`{"id":"a","count":0}`))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The parameters an empty value violates are found from their schemas:
// typed values, enums, patterns, minLength, dates and arrays of such items;
// free strings, arrays of free strings, an enum with "" and a parameter
// that allows an empty value are not. Each comes with a valid value of the
// operation's other required parameters.
func TestEmptyRefusingQueryParams(t *testing.T) {
	t.Parallel()
	params, err := load(t).EmptyRefusingQueryParams()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range params {
		got = append(got, p.Method+" "+p.Path+"?"+p.Name+"=&"+p.Required.Encode())
	}
	want := []string{
		"GET /api/v1/items/{id}?codes=&kind=book", "GET /api/v1/items/{id}?fresh=&kind=book",
		"GET /api/v1/items/{id}?kind=&", "GET /api/v1/items/{id}?limit=&kind=book",
		"GET /api/v1/items/{id}?name=&kind=book", "GET /api/v1/items/{id}?prefix=&kind=book",
		"GET /api/v1/items/{id}?since=&kind=book", "GET /api/v1/items/{id}?status=&kind=book",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("EmptyRefusingQueryParams:\n got %q\nwant %q", got, want)
	}
}

// A required parameter without an example, default or enum gives no
// value to send beside the others: an error, not a check that cannot
// reach its handler.
func TestEmptyRefusingQueryParamsNeedsValuesOfRequiredOnes(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load([]byte(`openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /x:
    get:
      parameters:
        - {name: q, in: query, required: true, schema: {type: string}}
        - {name: n, in: query, schema: {type: integer}}
      responses:
        '200': {description: ok}
`))
	if err != nil {
		t.Fatal(err)
	}
	if params, err := doc.EmptyRefusingQueryParams(); err == nil || !strings.Contains(err.Error(), "required query parameter q") {
		t.Fatalf("got %v, %v; want an error naming q", params, err)
	}
}
