// Package openapi serves a service's OpenAPI 3 document and checks real
// answers against it. Each service embeds its own document (YAML) and loads
// it here once: the API serves the JSON form at /api/v1/openapi.json, and the
// API tests pass every answer they get through Document.CheckResponse, so
// the published contract cannot drift from what the handlers send.
package openapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Document is a parsed and validated OpenAPI 3 document with its JSON form.
// It is safe for concurrent use.
type Document struct {
	spec *openapi3.T
	json []byte

	// The router that finds an answer's operation is built on the first
	// check, so a service that only serves the document never builds it.
	routerOnce sync.Once
	router     routers.Router
	routerErr  error
}

// Load parses doc (YAML or JSON) and validates it as OpenAPI 3. A service
// calls it at start-up, so an invalid document stops the service rather
// than being served.
func Load(doc []byte) (*Document, error) {
	spec, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	if err := spec.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate openapi document: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode openapi document: %w", err)
	}
	return &Document{spec: spec, json: b}, nil
}

// JSON returns the document encoded as JSON. The caller must not modify it.
func (d *Document) JSON() []byte { return d.json }

// ServeHTTP answers with the document as JSON, whatever the request.
func (d *Document) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(d.json)
}

// CheckResponse reports how an answer (status, header, body) to req departs
// from the document, or nil when it does not:
//   - an answer other than 204 No Content must be JSON, and a 204 must be
//     empty;
//   - for an operation of the document, the status must be one it lists and
//     the body must match that status's schema;
//   - a request that matches no operation (a mistyped path, a path trick)
//     must still get the error envelope {"error":{"code","message"}} with
//     both fields set.
//
// req may be a server-side request or one a client has already sent: its
// body is not read.
func (d *Document) CheckResponse(req *http.Request, status int, header http.Header, body []byte) error {
	if status == http.StatusNoContent {
		if len(body) != 0 {
			return fmt.Errorf("%s %s: answer 204 has a body: %.200s", req.Method, req.URL, body)
		}
	} else if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("%s %s: answer %d has content type %q, want JSON; body %.200s", req.Method, req.URL, status, ct, body)
	}
	router, err := d.operations()
	if err != nil {
		return err
	}
	// The router only reads the method, URL and host; a request whose body
	// was sent or read must not be read again.
	find := req.Clone(context.Background())
	find.Body = http.NoBody
	route, params, err := router.FindRoute(find)
	if err != nil {
		if status == http.StatusNoContent || !isErrorEnvelope(body) {
			return fmt.Errorf("%s %s: answer %d of no documented operation is not a JSON error: %.200s", req.Method, req.URL, status, body)
		}
		return nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: find, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s: answer %d does not match the OpenAPI document: %w\nbody: %.2000s", req.Method, req.URL, status, err, body)
	}
	return nil
}

// QueryParam names one query parameter of one operation: Path is the
// document's path template ("/api/v1/items/{id}"). Required holds a valid
// value for each other required query parameter of the operation, so a
// request can reach the check of this one.
type QueryParam struct {
	Method, Path, Name string
	Required           url.Values
}

// EmptyRefusingQueryParams lists, sorted, the query parameters whose
// schema refuses an empty value ("?name="): a number, an integer or a
// boolean, an enum without "", a pattern or minLength "" fails, a date or
// date-time format, or an array whose items refuse "". A handler must
// answer such a value with 400: one that reads "" as "not given" accepts a
// request the document calls invalid. The API tests send each of them.
//
// The value of another required parameter is its example, its default or
// its first enum value; a required parameter with none of them is an
// error, as no request could reach the check.
func (d *Document) EmptyRefusingQueryParams() ([]QueryParam, error) {
	var out []QueryParam
	for path, item := range d.spec.Paths.Map() {
		for method, op := range item.Operations() {
			var query []*openapi3.Parameter
			for _, ref := range append(slices.Clone(item.Parameters), op.Parameters...) {
				if p := ref.Value; p != nil && p.In == openapi3.ParameterInQuery && p.Schema != nil {
					query = append(query, p)
				}
			}
			for _, p := range query {
				if p.AllowEmptyValue || !refusesEmpty(p.Schema.Value) {
					continue
				}
				required := url.Values{}
				for _, other := range query {
					if other == p || !other.Required {
						continue
					}
					v, ok := validValue(other)
					if !ok {
						return nil, fmt.Errorf("openapi: %s %s: required query parameter %s has no example, default or enum to send beside %s",
							method, path, other.Name, p.Name)
					}
					required.Set(other.Name, v)
				}
				out = append(out, QueryParam{Method: method, Path: path, Name: p.Name, Required: required})
			}
		}
	}
	slices.SortFunc(out, func(a, b QueryParam) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Method, b.Method), strings.Compare(a.Name, b.Name))
	})
	return out, nil
}

// validValue is a value of p's documented examples: the parameter's
// example, its schema's example or default, or the first enum value.
func validValue(p *openapi3.Parameter) (string, bool) {
	s := p.Schema.Value
	for _, v := range []any{p.Example, s.Example, s.Default} {
		if v != nil {
			return fmt.Sprint(v), true
		}
	}
	if len(s.Enum) > 0 {
		return fmt.Sprint(s.Enum[0]), true
	}
	return "", false
}

func refusesEmpty(s *openapi3.Schema) bool {
	if s == nil {
		return false
	}
	if s.Type.Is(openapi3.TypeArray) {
		return s.Items != nil && refusesEmpty(s.Items.Value)
	}
	if s.Format == "date" || s.Format == "date-time" {
		return true
	}
	return s.VisitJSON("") != nil
}

func (d *Document) operations() (routers.Router, error) {
	d.routerOnce.Do(func() {
		d.router, d.routerErr = gorillamux.NewRouter(d.spec)
		if d.routerErr != nil {
			d.routerErr = fmt.Errorf("route openapi document: %w", d.routerErr)
		}
	})
	return d.router, d.routerErr
}

// isErrorEnvelope reports whether body is {"error":{"code":...,"message":...}}
// with both fields non-empty.
func isErrorEnvelope(body []byte) bool {
	var e struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return false
	}
	return e.Error != nil && e.Error.Code != "" && e.Error.Message != ""
}
