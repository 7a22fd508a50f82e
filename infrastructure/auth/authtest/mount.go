package authtest

import (
	"database/sql"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/testenv"
)

// Mounted is a service's API as its main mounts it, with what the role and
// parameter checks need of it.
type Mounted struct {
	Router *gin.Engine
	Auth   *auth.Authenticator
	DB     *sql.DB
}

// Mount serves a service's API over db as its main does: the shared server
// under the service's name (text rule, body limit), an authenticator of the
// test's own and the audit log in db, handed to mount with the audit group
// configuration main passes. db must hold the audit_log table.
func Mount(t testing.TB, service string, db *sql.DB, mount func(gin.IRouter, audit.GroupConfig) error) Mounted {
	t.Helper()
	log := testenv.Logger(t)
	authn := New(t, "0123456789abcdef0123456789abcdef-roles")
	auditLog, err := audit.NewStore(db)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Config{Addr: ":0", ServiceName: service}, log, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	if err := mount(srv.Router(), audit.GroupConfig{Auth: authn, Store: auditLog, MetricPrefix: service, Logger: log}); err != nil {
		t.Fatalf("mount the %s api: %v", service, err)
	}
	return Mounted{Router: srv.Router(), Auth: authn, DB: db}
}
