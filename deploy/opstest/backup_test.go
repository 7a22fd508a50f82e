package opstest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/north-cloud/infrastructure/testenv"
)

// TestTaskBackupRestoreOneDatabase runs `task db:backup:<db>` and then `task db:restore:<db>`
// for the classifier's and the publisher's database (the runbook's "always backup first"
// before a migration of one service) against a scratch database of the real Postgres, owned
// by a role whose password needs URL escaping, and checks that a row survives the round trip,
// that the dump is readable by its owner only, and that the password never appears on a
// pg_dump or pg_restore command line (where every user of the machine can read it in ps).
//
// go-task itself is not needed (the test command does not install it): the tasks' commands
// are read from Taskfile.yml and run from the repository root, as go-task runs them, with the
// backup directory as the task's CLI_ARGS (`task db:backup:classifier -- DIR`).
func TestTaskBackupRestoreOneDatabase(t *testing.T) {
	t.Parallel()
	requireTools(t, "bash", "pg_dump", "pg_restore")
	tasks := taskfileCommands(t)
	for _, c := range []struct{ db, urlVar string }{
		{"classifier", "CLASSIFIER_DATABASE_URL"},
		{"publisher", "PUBLISHER_DATABASE_URL"},
	} {
		t.Run(c.db, func(t *testing.T) {
			t.Parallel()
			dsn, password := scratchDatabase(t)
			db := openDB(t, dsn)
			marker := testenv.UniqueName("survives-")
			mustExec(t, db, `CREATE TABLE backup_probe (id INT PRIMARY KEY, note TEXT NOT NULL)`)
			mustExec(t, db, `INSERT INTO backup_probe VALUES (1, '`+marker+`')`)

			shims, argv := pgShims(t, "pg_dump", "pg_restore")
			env := taskEnv(shims, c.urlVar, dsn)
			// A directory that does not exist yet: the task creates it, for its owner only.
			dir := filepath.Join(t.TempDir(), "backups")

			out := runTask(t, tasks, "db:backup:"+c.db, dir, env)
			files, _ := filepath.Glob(filepath.Join(dir, "*"))
			if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), c.db+"-") || !strings.HasSuffix(files[0], ".dump") {
				t.Fatalf("db:backup:%s wrote %v, want one %s-<stamp>.dump\n%s", c.db, files, c.db, out)
			}
			if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() == 0 {
				t.Errorf("%s: %v (err %v), want a non-empty file of mode 0600", files[0], fi, err)
			}
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v (err %v), want a directory of mode 0700", dir, fi, err)
			}

			// After the backup the row goes and another comes: the restore must bring back
			// the database as it was dumped, not merge into what is there.
			mustExec(t, db, `DELETE FROM backup_probe`)
			mustExec(t, db, `INSERT INTO backup_probe VALUES (2, 'written after the backup')`)

			out = runTask(t, tasks, "db:restore:"+c.db, dir, env)
			if !strings.Contains(out, c.db+": restored from "+files[0]) {
				t.Errorf("db:restore:%s output does not name the dump it restored:\n%s", c.db, out)
			}
			expectRow(t, db, `SELECT COUNT(*) = 1 AND BOOL_AND(id = 1 AND note = '`+marker+`') FROM backup_probe`)

			calls := argv()
			for _, tool := range []string{"pg_dump", "pg_restore"} {
				if !strings.Contains(calls, tool+" ") {
					t.Errorf("%s never ran (calls:\n%s)", tool, calls)
				}
			}
			for _, form := range []string{password, url.QueryEscape(password), url.PathEscape(password), url.UserPassword("x", password).String()[2:]} {
				if strings.Contains(calls, form) {
					t.Errorf("the password (as %q) is on a command line:\n%s", form, calls)
				}
			}
		})
	}

	// A restore with no dump of the database restores nothing and says which is missing.
	t.Run("no dump", func(t *testing.T) {
		t.Parallel()
		shims, _ := pgShims(t, "pg_dump", "pg_restore")
		env := taskEnv(shims, "PUBLISHER_DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
		out, err := taskCommand(t, tasks, "db:restore:publisher", t.TempDir(), env)
		if err == nil || !strings.Contains(out, "no dump of publisher") || !strings.Contains(out, "nothing restored") {
			t.Errorf("db:restore:publisher with no dump: err %v, output:\n%s", err, out)
		}
	})
}

func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, tool, err)
		}
	}
}

// taskfileCommands reads the commands of every task of Taskfile.yml whose commands are
// plain strings.
func taskfileCommands(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "Taskfile.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tasks map[string]struct {
			Cmds []any `yaml:"cmds"`
		} `yaml:"tasks"`
	}
	if err := yaml.Unmarshal(raw, &tf); err != nil {
		t.Fatalf("Taskfile.yml: %v", err)
	}
	out := map[string][]string{}
	for name, task := range tf.Tasks {
		for _, c := range task.Cmds {
			if s, ok := c.(string); ok {
				out[name] = append(out[name], s)
			}
		}
	}
	return out
}

// taskCommand runs the commands of task with args as its CLI_ARGS, from the repository
// root, and returns their combined output.
func taskCommand(t *testing.T, tasks map[string][]string, task, args string, env []string) (string, error) {
	t.Helper()
	cmds := tasks[task]
	if len(cmds) == 0 {
		t.Fatalf("Taskfile.yml has no task %s with commands", task)
	}
	dir, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, c := range cmds {
		script := strings.ReplaceAll(c, "{{.CLI_ARGS}}", shellQuote(args))
		if strings.Contains(script, "{{") {
			t.Fatalf("task %s: %q uses a template this test does not expand", task, c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
		cmd.Dir, cmd.Env = dir, env
		b, err := cmd.CombinedOutput()
		cancel()
		fmt.Fprintf(&out, "$ %s\n%s", script, b)
		if err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

func runTask(t *testing.T, tasks map[string][]string, task, args string, env []string) string {
	t.Helper()
	out, err := taskCommand(t, tasks, task, args, env)
	if err != nil {
		t.Fatalf("task %s -- %s: %v\n%s", task, args, err, out)
	}
	t.Logf("task %s:\n%s", task, out)
	return out
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// taskEnv is the test's environment without any *_DATABASE_URL or libpq password source
// (PGPASSFILE names no file), with the shims first on PATH and urlVar set to dsn: a task
// that reached for another database than its own fails, and none can touch the databases
// the running services use.
func taskEnv(shims, urlVar, dsn string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH", name == "PGPASSWORD", name == "PGPASSFILE", name == "NC_DB_COMPOSE":
		case strings.HasSuffix(name, "_DATABASE_URL"):
		default:
			env = append(env, kv)
		}
	}
	return append(env,
		"PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PGPASSFILE="+filepath.Join(shims, "no-such-pgpass"),
		"PGCONNECT_TIMEOUT=10",
		urlVar+"="+dsn,
	)
}

// pgShims makes a directory of stand-ins for tools (Postgres's command-line programs) that
// record their command line and run the real programs, and returns it with a function
// reading what they recorded.
func pgShims(t *testing.T, tools ...string) (dir string, argv func() string) {
	t.Helper()
	dir = t.TempDir()
	log := filepath.Join(dir, "argv.log")
	for _, tool := range tools {
		real, err := exec.LookPath(tool)
		if err != nil {
			testenv.Unavailable(t, tool, err)
		}
		script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"%s $*\" >>%s\nexec %s \"$@\"\n", tool, shellQuote(log), shellQuote(real))
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, func() string {
		b, _ := os.ReadFile(log)
		return string(b)
	}
}

// adminDB opens the services' Postgres as its superuser (POSTGRES_ADMIN_URL), closed when
// the test ends, and returns it with its URL.
func adminDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	adminURL := testenv.Env(t, "POSTGRES_ADMIN_URL", "postgres")
	admin, err := sql.Open("postgres", adminURL)
	if err != nil {
		testenv.Unavailable(t, "postgres", err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		testenv.Unavailable(t, "postgres", err)
	}
	return admin, adminURL
}

// scratchDatabase creates a database owned by a new login role whose password holds the
// characters a URL must escape (@ : / %), both dropped when the test ends, and returns the
// role's URL for it (the password percent-encoded) and the password.
func scratchDatabase(t *testing.T) (dsn, password string) {
	t.Helper()
	admin, adminURL := adminDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	role := testenv.UniqueName("nctest_backup_")
	password = "p@ss:w/rd%" + testenv.UniqueName("")
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, role, password)); err != nil {
		t.Fatalf("create role: %v", err)
	}
	// Cleanups run last first: the database goes before its owner.
	t.Cleanup(func() { _, _ = admin.Exec(`DROP ROLE IF EXISTS ` + role) })
	name := testenv.UniqueName("test_backup_")
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, name, role)); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return testenv.WithUser(t, testenv.WithDatabase(t, adminURL, name), role, password), password
}
