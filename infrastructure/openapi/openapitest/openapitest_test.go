package openapitest_test

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/north-cloud/infrastructure/openapi"
	"github.com/north-cloud/infrastructure/openapi/openapitest"
)

// answer is a handler that records the requests it gets and answers each
// with status and body.
func answer(status int, body string, got *[]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*got = append(*got, r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
}

// A handler that accepts an empty value is named once for each parameter
// that refuses one; a handler that answers each with a documented 400 is
// not named at all. Path parameters and the header are filled in.
func TestEmptyQueryProblems(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	params, err := doc.EmptyRefusingQueryParams()
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{"Authorization": {"Bearer t"}}
	values := map[string]string{"id": "item-7"}

	var sent []string
	loose := openapitest.EmptyQueryProblems(answer(http.StatusOK, `{"id":"item-7","count":1}`, &sent), params, doc, header, values)
	want := []string{"codes", "fresh", "kind", "limit", "name", "prefix", "since", "status"}
	if len(loose) != len(want) {
		t.Fatalf("%d problems of a handler that accepts every empty value, want %d:\n%s", len(loose), len(want), strings.Join(loose, "\n"))
	}
	for i, name := range want {
		if !strings.Contains(loose[i], "?"+name+"= (empty) = 200") {
			t.Errorf("problem %d = %q, want it to name %s", i, loose[i], name)
		}
		s := "/api/v1/items/item-7?" + name + "=&kind=book Bearer t"
		if name == "kind" {
			s = "/api/v1/items/item-7?kind= Bearer t"
		}
		if sent[i] != s {
			t.Errorf("request %d = %q, want %q", i, sent[i], s)
		}
	}

	sent = nil
	strict := openapitest.EmptyQueryProblems(answer(http.StatusBadRequest, `{"error":{"code":"bad_request","message":"empty"}}`, &sent), params, doc, header, values)
	if len(strict) != 0 || len(sent) != len(want) {
		t.Errorf("a handler that refuses every empty value: %d requests, problems %q", len(sent), strict)
	}

	// A 400 without the envelope's message is a problem too.
	bare := openapitest.EmptyQueryProblems(answer(http.StatusBadRequest, `{"error":{"code":"bad_request","message":""}}`, &sent), params, doc, header, values)
	if !slices.ContainsFunc(bare, func(p string) bool { return strings.Contains(p, "want 400 with a message") }) {
		t.Errorf("a 400 without a message passed: %q", bare)
	}
}
