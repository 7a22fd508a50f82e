package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// PGCluster is a private PostgreSQL cluster for one test (initdb into a
// temporary directory, its own port and socket directory), provisioned like
// scripts/services.sh provisions the shared one: the roles classifier,
// publisher and index_manager, each with a database of the same name that it
// owns and its name as password, and postgres/postgres as superuser. A test
// may stop and start it; the shared cluster is never touched.
type PGCluster struct {
	// Port is the TCP port on 127.0.0.1.
	Port int

	t     testing.TB
	bin   string // the PostgreSQL bin directory
	data  string
	sock  string
	owner serviceUser
	log   *logFile
}

// Databases PrivatePostgres provisions, as scripts/services.sh does.
var privateDatabases = []string{"classifier", "publisher", "index_manager"}

// pgBinDir finds the newest PostgreSQL server Debian installed.
func pgBinDir() (string, error) {
	if d := os.Getenv("NC_PG_BIN"); d != "" {
		return d, nil
	}
	ctl := newest("/usr/lib/postgresql/*/bin/pg_ctl")
	if ctl == "" {
		return "", fmt.Errorf("no PostgreSQL server under /usr/lib/postgresql (scripts/services.sh up installs it; or set NC_PG_BIN)")
	}
	return filepath.Dir(ctl), nil
}

// PrivatePostgres creates, starts and provisions a private cluster. It is
// stopped (immediate mode) and removed when the test ends.
func PrivatePostgres(t testing.TB) *PGCluster {
	t.Helper()
	bin, err := pgBinDir()
	if err != nil {
		Unavailable(t, "postgres (private cluster)", err)
	}
	owner := lookupServiceUser(t, "postgres (private cluster)", "postgres")
	dir := privateDir(t, "nc-private-pg-", owner)
	c := &PGCluster{
		Port: FreePort(t), t: t, bin: bin, owner: owner,
		data: filepath.Join(dir, "data"), sock: filepath.Join(dir, "run"),
		log: &logFile{path: filepath.Join(dir, "postgres.log")},
	}
	mkdirOwned(t, c.sock, 0o755, owner)
	writeOwned(t, c.log.path, nil, 0o644, owner)
	if out, err := run(owner, c.env(), filepath.Join(bin, "initdb"), "-D", c.data, "-U", "postgres", "-E", "UTF8",
		"--locale=C.UTF-8", "--auth-local=trust", "--auth-host=scram-sha-256"); err != nil {
		t.Fatalf("private postgres: initdb: %v\n%s", err, out)
	}
	conf := fmt.Sprintf(`
# written by testenv.PrivatePostgres
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
max_connections = 100
fsync = off
synchronous_commit = off
full_page_writes = off
`, c.Port, c.sock)
	f, err := os.OpenFile(filepath.Join(c.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("private postgres: %v", err)
	}
	_, err = f.WriteString(conf)
	f.Close()
	if err != nil {
		t.Fatalf("private postgres: %v", err)
	}
	t.Cleanup(func() {
		_, _ = run(c.owner, c.env(), filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-m", "immediate", "-w", "-t", "30", "stop")
	})
	c.Start()
	c.provision()
	return c
}

func (c *PGCluster) env() []string {
	return []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Dir(c.data), "LC_ALL=C.UTF-8"}
}

// Start starts the cluster and waits until it accepts connections.
func (c *PGCluster) Start() {
	c.t.Helper()
	c.log.note("start at %s", time.Now().UTC().Format(time.RFC3339Nano))
	out, err := run(c.owner, c.env(), filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-l", c.log.path, "-w", "-t", "60", "start")
	if err != nil {
		c.t.Fatalf("private postgres: pg_ctl start: %v\n%s\n%s", err, out, c.LogTail(20))
	}
}

// Stop stops the cluster with pg_ctl stop -m fast (clients are disconnected,
// nothing is lost) and waits until it is down.
func (c *PGCluster) Stop() {
	c.t.Helper()
	c.log.note("stop -m fast at %s", time.Now().UTC().Format(time.RFC3339Nano))
	out, err := run(c.owner, c.env(), filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		c.t.Fatalf("private postgres: pg_ctl stop: %v\n%s", err, out)
	}
}

// URL returns a TCP connection string for user on database db; the
// password of every provisioned role is its name (postgres: postgres).
func (c *PGCluster) URL(user, db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", user, user, c.Port, db)
}

// AdminURL is the superuser connection string (database postgres).
func (c *PGCluster) AdminURL() string { return c.URL("postgres", "postgres") }

// LogTail returns the last lines of the server log.
func (c *PGCluster) LogTail(lines int) string { return c.log.Tail(lines) }

// Exec runs statements as the superuser on database db, over the socket.
func (c *PGCluster) Exec(db, statements string) {
	c.t.Helper()
	conn, err := sql.Open("postgres", "host="+c.sock+" port="+strconv.Itoa(c.Port)+" user=postgres dbname="+db+" sslmode=disable")
	if err != nil {
		c.t.Fatalf("private postgres: %v", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, statements); err != nil {
		c.t.Fatalf("private postgres: %v\n%s", err, statements)
	}
}

func (c *PGCluster) provision() {
	c.t.Helper()
	c.Exec("postgres", `ALTER ROLE postgres PASSWORD 'postgres'`)
	for _, db := range privateDatabases {
		c.Exec("postgres", fmt.Sprintf(`CREATE ROLE %[1]s WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '%[1]s'`, db))
		c.Exec("postgres", fmt.Sprintf(`CREATE DATABASE %[1]s OWNER %[1]s`, db))
	}
}
