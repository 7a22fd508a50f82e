package main

import (
	"net/http"
	"testing"

	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/testenv"
	"github.com/north-cloud/publisher/internal/api"
	"github.com/north-cloud/publisher/internal/outbox"
	"github.com/north-cloud/publisher/internal/outboxtest"
)

// TestRoleMatrix mounts the API as serve does (mountAPI) over a migrated
// database, calls every route with a token of every role and checks the
// answers against the policy, the docs' matrix against the routes, and
// that every call to a mutating route was audited.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	db, _ := outboxtest.Database(t)
	log := testenv.Logger(t)
	authn, err := auth.New(auth.Config{Secret: "0123456789abcdef0123456789abcdef-roles"})
	if err != nil {
		t.Fatal(err)
	}
	auditLog, err := audit.NewStore(db)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Config{Addr: ":0", ServiceName: "publisher"}, log, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	if err := mountAPI(srv.Router(), audit.GroupConfig{Auth: authn, Store: auditLog, MetricPrefix: "publisher", Logger: log},
		api.New(outbox.NewRepository(db), log)); err != nil {
		t.Fatal(err)
	}
	authtest.CheckService(t, srv.Router(), authn, apiPolicy(), db, "../../../docs/roles.md", "publisher")
}
