package e2e

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
)

type esSearcher = *esclient.Client

// search reads every raw document under prefix (after a refresh) into out.
func search(t *testing.T, es *esclient.Client, prefix string, out any) {
	t.Helper()
	pattern := prefix + "*" + contentindex.RawSuffix
	res, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(pattern))
	if err := esclient.CheckResponse("refresh", res, err); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	body, _ := json.Marshal(map[string]any{"size": 10000, "query": map[string]any{"match_all": map[string]any{}}})
	res, err = es.Search(es.Search.WithIndex(pattern), es.Search.WithBody(bytes.NewReader(body)))
	if err := esclient.CheckResponse("search raw", res, err); err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}
