package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// initEnvDir is a directory laid out like the tree for scripts/init-env.sh
// (which writes .env beside scripts/), with a fake htpasswd first on PATH
// that records its arguments and standard input and answers as hash says.
func initEnvDir(t *testing.T, hash string) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"scripts/init-env.sh", ".env.example"} {
		if err := os.Symlink(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\nprintf '%s\\n' \"$*\" >" + filepath.Join(dir, "htpasswd.args") + "\ncat >" + filepath.Join(dir, "htpasswd.stdin") + "\n" + hash + "\n"
	if err := os.WriteFile(filepath.Join(bin, "htpasswd"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"PATH=" + bin + ":/usr/bin:/bin"}
}

func runInitEnv(t *testing.T, dir string, env []string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "scripts", "init-env.sh"))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// leftovers lists the files init-env.sh may have left beside .env.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".env.*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m {
		if filepath.Base(f) != ".env.example" {
			out = append(out, filepath.Base(f))
		}
	}
	return out
}

// The operator password goes to htpasswd on its standard input, never on
// its command line (which ps shows to everyone; before, it was htpasswd's
// last argument), and .env is written complete, mode 600.
func TestInitEnvPasswordOnStdin(t *testing.T) {
	t.Parallel()
	dir, env := initEnvDir(t, `echo 'operator:$2y$12$abcdefghijklmnopqrstuuQWERTYUIOPASDFGHJKLZXCVBNMqwert'`)
	out, err := runInitEnv(t, dir, env)
	if err != nil {
		t.Fatalf("init-env.sh: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`dashboard login is: \S+ / (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no operator password printed:\n%s", out)
	}
	password := m[1]
	args, _ := os.ReadFile(filepath.Join(dir, "htpasswd.args"))
	stdin, _ := os.ReadFile(filepath.Join(dir, "htpasswd.stdin"))
	if strings.Contains(string(args), password) {
		t.Errorf("the password is on htpasswd's command line: %q", args)
	}
	if strings.TrimSpace(string(stdin)) != password {
		t.Errorf("htpasswd's standard input = %q, want the password", stdin)
	}
	st, err := os.Stat(filepath.Join(dir, ".env"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf(".env mode = %v, want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(filepath.Join(dir, ".env"))
	if !strings.Contains(string(b), `INDEX_MANAGER_ADMIN_PASSWORD_HASH='$2a$12$abcdefghij`) {
		t.Errorf(".env has no hash:\n%s", b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") && strings.Contains(line, "change-me") {
			t.Errorf(".env keeps a placeholder: %s", line)
		}
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

// A failed hash leaves no .env (before, a .env with a placeholder hash was
// left, and the next run skipped it as existing), and no temporary file; the
// next run writes one.
func TestInitEnvFailedHashLeavesNoEnv(t *testing.T) {
	t.Parallel()
	dir, env := initEnvDir(t, "exit 1")
	out, err := runInitEnv(t, dir, env)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("init-env.sh with a failing hash = %v, want a failure\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".env")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf(".env after a failed hash: %v\n%s", err, out)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
	fake := "#!/bin/sh\ncat >/dev/null\necho 'operator:$2y$12$abcdefghijklmnopqrstuuQWERTYUIOPASDFGHJKLZXCVBNMqwert'\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "htpasswd"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := runInitEnv(t, dir, env); err != nil || !strings.Contains(out, "wrote .env") {
		t.Fatalf("the next run: %v\n%s", err, out)
	}
}

// The containers whose secrets no service of ours reads (the Postgres
// superuser, Grafana's admin) refuse the placeholders of .env.example
// through deploy/refuse-placeholders.sh, which docker-compose.yml puts
// before their entrypoints; before, they started with the public values.
func TestContainersRefuseThePlaceholders(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "deploy", "refuse-placeholders.sh")
	run := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(script, args...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			return string(out), exit.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return string(out), 0
	}
	example, err := os.ReadFile(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	compose, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ envName, containerVar string }{
		{"POSTGRES_SUPERUSER_PASSWORD", "POSTGRES_PASSWORD"},
		{"GRAFANA_ADMIN_PASSWORD", "GF_SECURITY_ADMIN_PASSWORD"},
	} {
		placeholder := regexp.MustCompile(`(?m)^` + tc.envName + `=(.*)$`).FindSubmatch(example)
		if placeholder == nil {
			t.Fatalf(".env.example has no %s", tc.envName)
		}
		arg := tc.containerVar + ":" + tc.envName
		out, code := run([]string{tc.containerVar + "=" + string(placeholder[1])}, arg, "--", "echo", "started")
		if code != 2 || !strings.Contains(out, tc.envName) || strings.Contains(out, "started") {
			t.Errorf("%s placeholder: exit %d\n%s; want 2 naming it, without starting", tc.envName, code, out)
		}
		if out, code := run([]string{tc.containerVar + "=0123456789abcdef"}, arg, "--", "echo", "started"); code != 0 || strings.TrimSpace(out) != "started" {
			t.Errorf("%s set: exit %d\n%s; want the entrypoint run", tc.envName, code, out)
		}
		if !strings.Contains(string(compose), `"/usr/local/bin/refuse-placeholders.sh", "`+arg+`", "--"`) {
			t.Errorf("docker-compose.yml does not refuse the %s placeholder before the entrypoint", tc.envName)
		}
	}
	if strings.Count(string(compose), "./deploy/refuse-placeholders.sh:/usr/local/bin/refuse-placeholders.sh:ro") != 4 {
		t.Error("refuse-placeholders.sh is not mounted into the three Postgres containers and Grafana")
	}
}
