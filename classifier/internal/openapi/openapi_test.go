package openapi

import (
	"encoding/json"
	"testing"
)

func TestDocumentLoadsAndValidates(t *testing.T) {
	t.Parallel()
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.0.3" || len(doc.Paths) != 16 {
		t.Fatalf("openapi %q with %d paths, want 3.0.3 with 16", doc.OpenAPI, len(doc.Paths))
	}
}
