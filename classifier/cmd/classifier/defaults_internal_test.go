package main

import (
	"maps"
	"testing"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/config/configtest"
)

// Every documented default, spelled out as docker-compose.yml passes it, is
// accepted.
func TestDocumentedDefaultsLoad(t *testing.T) {
	t.Parallel()
	env := configtest.Defaults(t, "../../../docs/configuration.md", "Shared by every service", "classifier")
	maps.Copy(env, required())
	if _, err := loadConfig(config.NewFromMap(env)); err != nil {
		t.Fatalf("documented defaults refused: %v", err)
	}
}
