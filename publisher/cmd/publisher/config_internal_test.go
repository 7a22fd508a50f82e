package main

import (
	"maps"
	"testing"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/config/configtest"
)

// Every documented default, spelled out as docker-compose.yml passes it, is
// accepted: compose once crash-looped the publisher on its own documented
// PUBLISHER_OUTBOX_NOTIFY_DEBOUNCE=0s.
func TestDocumentedDefaultsLoad(t *testing.T) {
	t.Parallel()
	env := configtest.Defaults(t, "../../../docs/configuration.md", "Shared by every service", "publisher")
	maps.Copy(env, map[string]string{
		"PUBLISHER_DATABASE_URL": "postgres://publisher:pw@127.0.0.1:5432/publisher?sslmode=disable",
		"JWT_SECRET":             "0123456789abcdef0123456789abcdef-test",
	})
	if _, err := loadConfig(config.NewFromMap(env)); err != nil {
		t.Fatalf("documented defaults refused: %v", err)
	}
}
