// Package openapi embeds the classifier API's OpenAPI 3 document
// (openapi.yaml: rules and operations). The api package serves it at
// /api/v1/openapi.json and the API tests check every answer against it, both
// through the shared infrastructure/openapi package.
package openapi

import (
	_ "embed"

	"github.com/north-cloud/infrastructure/openapi"
)

//go:embed openapi.yaml
var document []byte

// Load parses and validates the embedded document.
func Load() (*openapi.Document, error) { return openapi.Load(document) }
