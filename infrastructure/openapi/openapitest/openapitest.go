// Package openapitest checks a service's handlers against what its OpenAPI
// document says is invalid input, so a parameter the document constrains
// cannot be read more loosely by its handler.
package openapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/north-cloud/infrastructure/openapi"
)

// PathValue fills every path parameter pathValues gives no value for.
const PathValue = "zz-emptyquery"

// CheckEmptyQueryParams sends every query parameter of doc whose schema
// refuses an empty value (Document.EmptyRefusingQueryParams) to h as
// "?name=", beside valid values of the operation's other required
// parameters, with header (a token of a role every such route allows),
// and wants 400 with the error envelope, the answer matching doc. A
// handler that reads "" as "not given" answers 200 to a request the
// document calls invalid. pathValues fills path parameters by name (an
// index that exists, say), PathValue the others.
func CheckEmptyQueryParams(t *testing.T, h http.Handler, doc *openapi.Document, header http.Header, pathValues map[string]string) {
	t.Helper()
	params, err := doc.EmptyRefusingQueryParams()
	if err != nil {
		t.Fatal(err)
	}
	if len(params) == 0 {
		t.Fatal("the OpenAPI document has no query parameter that refuses an empty value: nothing to check")
	}
	for _, problem := range EmptyQueryProblems(h, params, doc, header, pathValues) {
		t.Error(problem)
	}
}

// EmptyQueryProblems is CheckEmptyQueryParams's work on params (from
// doc.EmptyRefusingQueryParams): what each answer that is not a documented
// 400 with a message did wrong. Each request carries one empty parameter
// and the valid values of the operation's other required ones.
func EmptyQueryProblems(h http.Handler, params []openapi.QueryParam, doc *openapi.Document, header http.Header, pathValues map[string]string) []string {
	var problems []string
	for _, p := range params {
		query := p.Name + "="
		if len(p.Required) > 0 {
			query += "&" + p.Required.Encode()
		}
		req := httptest.NewRequest(p.Method, fill(p.Path, pathValues)+"?"+query, nil)
		for k, vs := range header {
			req.Header[k] = vs
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if err := doc.CheckResponse(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			problems = append(problems, err.Error())
		}
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != http.StatusBadRequest || e.Error.Message == "" {
			problems = append(problems, fmt.Sprintf("%s %s?%s= (empty) = %d %.200s, want 400 with a message",
				p.Method, p.Path, p.Name, rec.Code, rec.Body.Bytes()))
		}
	}
	return problems
}

// fill replaces each {param} of a path template.
func fill(path string, values map[string]string) string {
	parts := strings.Split(path, "/")
	for i, part := range parts {
		if !strings.HasPrefix(part, "{") || !strings.HasSuffix(part, "}") {
			continue
		}
		name := part[1 : len(part)-1]
		parts[i] = PathValue
		if v, ok := values[name]; ok {
			parts[i] = v
		}
	}
	return strings.Join(parts, "/")
}
