package opstest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/testenv"
)

// TestPostgresInitScriptsKeepPasswordsOffTheCommandLine runs the compose stack's Postgres
// init scripts (deploy/postgres, run once by the official image on a new volume) against a
// scratch database of the real Postgres, as the image runs them (sh, psql as the
// superuser), and checks that the role each creates logs in with its password, and that the
// password never appears on psql's command line, where every process of the container can
// read it.
func TestPostgresInitScriptsKeepPasswordsOffTheCommandLine(t *testing.T) {
	t.Parallel()
	requireTools(t, "sh", "psql")
	admin, adminURL := adminDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := url.Parse(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	superPassword, _ := u.User.Password()
	for _, c := range []struct{ script, userVar, passwordVar string }{
		{"10-app-role.sh", "APP_DB_USER", "APP_DB_PASSWORD"},
		{"20-outbox-writer.sh", "OUTBOX_WRITER_USER", "OUTBOX_WRITER_PASSWORD"},
	} {
		t.Run(c.script, func(t *testing.T) {
			db := testenv.UniqueName("test_initdb_")
			if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+db); err != nil {
				t.Fatalf("create database: %v", err)
			}
			role := testenv.UniqueName("nctest_initdb_")
			t.Cleanup(func() {
				_, _ = admin.Exec(fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, db))
				_, _ = admin.Exec(`DROP ROLE IF EXISTS ` + role)
			})
			password := "init'pw " + testenv.UniqueName("")
			shims, argv := pgShims(t, "psql")
			cmd := exec.Command("sh", "../postgres/"+c.script)
			cmd.Env = append(os.Environ(),
				"PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"),
				"PGHOST="+u.Hostname(), "PGPORT="+u.Port(), "PGPASSWORD="+superPassword,
				"POSTGRES_USER="+u.User.Username(), "POSTGRES_DB="+db,
				c.userVar+"="+role, c.passwordVar+"="+password)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c.script, err, out)
			}
			if calls := argv(); !strings.Contains(calls, "psql") || strings.Contains(calls, password) {
				t.Errorf("psql's command lines (want psql run, without the password):\n%s", calls)
			}
			roleDB, err := sql.Open("postgres", testenv.WithUser(t, testenv.WithDatabase(t, adminURL, db), role, password))
			if err != nil {
				t.Fatal(err)
			}
			defer roleDB.Close()
			if err := roleDB.PingContext(ctx); err != nil {
				t.Errorf("the role %s cannot log in with its password: %v", role, err)
			}
		})
	}
}
