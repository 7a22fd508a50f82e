// Package composetest checks docker-compose.yml, .env.example, .dockerignore and the service
// Dockerfiles without a Docker engine: the compose file is loaded, interpolated and validated
// with the compose-spec reference loader (the library `docker compose` itself uses), with the
// values of .env.example as the only environment.
package composetest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"go.yaml.in/yaml/v3"
)

const repoRoot = "../.."

// goServices are the long-running Go services: name -> container port.
var goServices = map[string]uint32{
	"classifier":    8071,
	"publisher":     8070,
	"index-manager": 8090,
}

// ownPostgres maps each Go service to its own Postgres service and database.
var ownPostgres = map[string]struct{ service, db string }{
	"classifier":    {"postgres-classifier", "classifier"},
	"publisher":     {"postgres-publisher", "publisher"},
	"index-manager": {"postgres-index-manager", "index_manager"},
}

// secrets must be interpolated fail-closed (${VAR:?message}).
var secrets = []string{
	"JWT_SECRET",
	"POSTGRES_SUPERUSER_PASSWORD",
	"CLASSIFIER_DB_PASSWORD",
	"CLASSIFIER_OUTBOX_DB_PASSWORD",
	"PUBLISHER_DB_PASSWORD",
	"INDEX_MANAGER_DB_PASSWORD",
	"GRAFANA_ADMIN_PASSWORD",
	"REDIS_ADMIN_PASSWORD",
	"REDIS_PUBLISHER_PASSWORD",
	"REDIS_DASHBOARD_PASSWORD",
	"REDIS_SUBSCRIBER_PASSWORD",
}

func path(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func envExample(t *testing.T) map[string]string {
	t.Helper()
	env, err := dotenv.Read(path(t, ".env.example"))
	if err != nil {
		t.Fatalf("read .env.example: %v", err)
	}
	return env
}

// load loads docker-compose.yml the way `docker compose --env-file .env.example config`
// does, but hermetically: neither the OS environment nor a developer's .env is consulted.
func load(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	opts, err := cli.NewProjectOptions(
		[]string{path(t, "docker-compose.yml")},
		cli.WithWorkingDirectory(path(t, ".")),
		cli.WithEnv(list),
	)
	if err != nil {
		t.Fatalf("project options: %v", err)
	}
	return opts.LoadProject(context.Background())
}

func project(t *testing.T) *types.Project {
	t.Helper()
	p, err := load(t, envExample(t))
	if err != nil {
		t.Fatalf("load docker-compose.yml with .env.example: %v", err)
	}
	return p
}

func oneShot(s types.ServiceConfig) bool { return s.Restart == types.RestartPolicyNo }

func TestProjectLoads(t *testing.T) {
	p := project(t)
	if p.Name != "north-cloud" {
		t.Errorf("project name = %q, want north-cloud", p.Name)
	}
	want := []string{
		"postgres-classifier", "postgres-publisher", "postgres-index-manager",
		"redis", "elasticsearch",
		"classifier", "publisher", "index-manager",
		"loader", "classifier-migrate", "publisher-migrate",
		"prometheus", "alertmanager", "grafana", "dashboard", "jaeger",
	}
	got := p.ServiceNames()
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("services = %v, want %v", got, want)
	}
}

func TestEveryServiceHasAHealthcheck(t *testing.T) {
	for name, s := range project(t).Services {
		hc := s.HealthCheck
		switch {
		case hc == nil:
			t.Errorf("%s: no healthcheck (a Dockerfile HEALTHCHECK is invisible to compose: declare it here)", name)
		case oneShot(s):
			// A job that exits has nothing to report: it must say so explicitly.
			if !hc.Disable {
				t.Errorf("%s: one-shot job should declare healthcheck.disable: true", name)
			}
		case hc.Disable || len(hc.Test) < 2 || hc.Test[0] == "NONE":
			t.Errorf("%s: long-running service has no usable healthcheck: %+v", name, hc.Test)
		case hc.Interval == nil || hc.Timeout == nil || hc.Retries == nil:
			t.Errorf("%s: healthcheck without interval/timeout/retries", name)
		}
	}
}

func TestGoServiceHealthchecksHitHealthOnTheirPort(t *testing.T) {
	p := project(t)
	for name, port := range goServices {
		s := p.Services[name]
		want := "http://127.0.0.1:" + strconv.Itoa(int(port)) + "/health"
		if s.HealthCheck == nil || !slices.Contains(s.HealthCheck.Test, want) {
			t.Errorf("%s: healthcheck %v does not GET %s", name, s.HealthCheck, want)
		}
	}
}

func TestLongRunningServicesRestart(t *testing.T) {
	for name, s := range project(t).Services {
		if !oneShot(s) && s.Restart != types.RestartPolicyUnlessStopped {
			t.Errorf("%s: restart = %q, want unless-stopped (or \"no\" for a one-shot job)", name, s.Restart)
		}
	}
	if s := project(t).Services["loader"]; !oneShot(s) {
		t.Errorf("loader: restart = %q, want \"no\"", s.Restart)
	}
}

func TestBuiltServicesRunAsNonRoot(t *testing.T) {
	for name, s := range project(t).Services {
		if s.Build == nil {
			continue
		}
		uid, _, _ := strings.Cut(s.User, ":")
		n, err := strconv.Atoi(uid)
		if s.User == "" || uid == "root" || (err == nil && n == 0) {
			t.Errorf("%s: built from %s but user = %q, want a non-root user", name, s.Build.Dockerfile, s.User)
		}
		if s.Build.Context != path(t, ".") {
			t.Errorf("%s: build context = %q, want the repository root", name, s.Build.Context)
		}
		if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
			t.Errorf("%s: dockerfile: %v", name, err)
		}
	}
}

func TestGoServicesDependOnTheirPostgresBeingHealthy(t *testing.T) {
	p := project(t)
	for svc, pg := range ownPostgres {
		dep, ok := p.Services[svc].DependsOn[pg.service]
		if !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("%s: depends_on %s = %+v, want condition service_healthy", svc, pg.service, dep)
		}
	}
	// The classifier also writes into the publisher's database (classified_outbox).
	if dep := p.Services["classifier"].DependsOn["postgres-publisher"]; dep.Condition != types.ServiceConditionHealthy {
		t.Errorf("classifier: depends_on postgres-publisher = %+v, want service_healthy", dep)
	}
	// Every service dependency on a long-running service waits for it to be healthy; on a
	// job, for it to have succeeded.
	for name, s := range p.Services {
		for dep, d := range s.DependsOn {
			want := types.ServiceConditionHealthy
			if oneShot(p.Services[dep]) {
				want = types.ServiceConditionCompletedSuccessfully
			}
			if d.Condition != want {
				t.Errorf("%s: depends_on %s condition = %q, want %q", name, dep, d.Condition, want)
			}
		}
	}
}

func TestPublishedPortsBindLoopbackOnly(t *testing.T) {
	for name, s := range project(t).Services {
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s: port %d published on %q, want 127.0.0.1", name, port.Target, port.HostIP)
			}
		}
	}
	p := project(t)
	for name, port := range goServices {
		if ports := p.Services[name].Ports; len(ports) != 1 || ports[0].Target != port {
			t.Errorf("%s: ports = %+v, want container port %d", name, ports, port)
		}
	}
}

func TestNamedVolumes(t *testing.T) {
	p := project(t)
	want := map[string]string{ // service -> data directory that must be a named volume
		"postgres-classifier":    "/var/lib/postgresql/data",
		"postgres-publisher":     "/var/lib/postgresql/data",
		"postgres-index-manager": "/var/lib/postgresql/data",
		"redis":                  "/data",
		"elasticsearch":          "/usr/share/elasticsearch/data",
		"prometheus":             "/prometheus",
		"alertmanager":           "/alertmanager",
		"grafana":                "/var/lib/grafana",
	}
	for svc, target := range want {
		found := false
		for _, v := range p.Services[svc].Volumes {
			if v.Target != target {
				continue
			}
			found = true
			if v.Type != types.VolumeTypeVolume {
				t.Errorf("%s: %s is a %s, want a named volume", svc, target, v.Type)
			} else if _, ok := p.Volumes[v.Source]; !ok {
				t.Errorf("%s: volume %q is not declared under top-level volumes", svc, v.Source)
			}
		}
		if !found {
			t.Errorf("%s: nothing mounted on %s", svc, target)
		}
	}
	// Every bind mount (the Postgres init scripts) points at a file in the repository.
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s: bind mount source: %v", name, err)
			}
			if !v.ReadOnly {
				t.Errorf("%s: bind mount %s should be read-only", name, v.Source)
			}
		}
	}
}

func TestEveryServiceHasResourceLimits(t *testing.T) {
	for name, s := range project(t).Services {
		if s.Deploy == nil || s.Deploy.Resources.Limits == nil {
			t.Errorf("%s: no deploy.resources.limits", name)
			continue
		}
		l := s.Deploy.Resources.Limits
		if l.MemoryBytes <= 0 {
			t.Errorf("%s: no memory limit", name)
		}
		if l.NanoCPUs <= 0 {
			t.Errorf("%s: no cpus limit", name)
		}
	}
}

func TestPostgresContainers(t *testing.T) {
	p := project(t)
	env := envExample(t)
	for _, pg := range ownPostgres {
		s := p.Services[pg.service]
		if want := "north-cloud-" + pg.service; s.ContainerName != want {
			t.Errorf("%s: container_name = %q, want %q", pg.service, s.ContainerName, want)
		}
		if s.Image != "postgres:15" {
			t.Errorf("%s: image = %q, want postgres:15", pg.service, s.Image)
		}
		e := s.Environment
		if v := e["POSTGRES_DB"]; v == nil || *v != pg.db {
			t.Errorf("%s: POSTGRES_DB = %v, want %s", pg.service, v, pg.db)
		}
		if v := e["POSTGRES_PASSWORD"]; v == nil || *v != env["POSTGRES_SUPERUSER_PASSWORD"] {
			t.Errorf("%s: POSTGRES_PASSWORD not taken from POSTGRES_SUPERUSER_PASSWORD", pg.service)
		}
		if hc := s.HealthCheck; hc == nil || !slices.Contains(hc.Test, "pg_isready") {
			t.Errorf("%s: healthcheck is not pg_isready: %+v", pg.service, hc)
		}
	}
	// postgres-publisher creates the classifier's outbox role with the password that the
	// classifier puts in CLASSIFIER_OUTBOX_DATABASE_URL.
	pub := p.Services["postgres-publisher"].Environment
	if v := pub["OUTBOX_WRITER_USER"]; v == nil || *v != "classifier" {
		t.Errorf("postgres-publisher: OUTBOX_WRITER_USER = %v, want classifier", v)
	}
	if v := pub["OUTBOX_WRITER_PASSWORD"]; v == nil || *v != env["CLASSIFIER_OUTBOX_DB_PASSWORD"] {
		t.Errorf("postgres-publisher: OUTBOX_WRITER_PASSWORD not taken from CLASSIFIER_OUTBOX_DB_PASSWORD")
	}
}

// Redis runs with the ACL users of deploy/redis/users.sh, whose passwords come from .env: each
// client connects as its own user (the publisher may publish, the dashboard only subscribe),
// and no service but Redis itself holds the admin's password.
func TestRedisUsersPerClient(t *testing.T) {
	p := project(t)
	env := envExample(t)
	r := p.Services["redis"]
	if len(r.Entrypoint) == 0 || r.Entrypoint[0] != "/usr/local/bin/redis-users.sh" {
		t.Errorf("redis: entrypoint = %v, want deploy/redis/users.sh", r.Entrypoint)
	}
	if !slices.Contains(r.Command, "--aclfile") {
		t.Errorf("redis: command = %v, want redis-server --aclfile", r.Command)
	}
	for _, name := range []string{"REDIS_ADMIN_PASSWORD", "REDIS_PUBLISHER_PASSWORD", "REDIS_DASHBOARD_PASSWORD", "REDIS_SUBSCRIBER_PASSWORD"} {
		if v := r.Environment[name]; v == nil || *v != env[name] {
			t.Errorf("redis: %s not taken from .env", name)
		}
	}
	if hc := r.HealthCheck; hc == nil || !slices.Contains(hc.Test, "admin") {
		t.Errorf("redis: the healthcheck does not authenticate (the default user is off): %+v", hc)
	}
	urls := map[string][2]string{
		"publisher": {"REDIS_URL", "redis://publisher:" + env["REDIS_PUBLISHER_PASSWORD"] + "@redis:6379/0"},
		"dashboard": {"DASHBOARD_REDIS_URL", "redis://dashboard:" + env["REDIS_DASHBOARD_PASSWORD"] + "@redis:6379/0"},
	}
	for svc, kv := range urls {
		if v := p.Services[svc].Environment[kv[0]]; v == nil || *v != kv[1] {
			t.Errorf("%s: %s = %v, want %q", svc, kv[0], v, kv[1])
		}
	}
	for name, s := range p.Services {
		if name == "redis" {
			continue
		}
		for k, v := range s.Environment {
			if v != nil && strings.Contains(*v, env["REDIS_ADMIN_PASSWORD"]) {
				t.Errorf("%s: %s holds Redis's admin password", name, k)
			}
		}
	}
}

func TestServiceEnvironmentPointsAtComposeHosts(t *testing.T) {
	p := project(t)
	env := envExample(t)
	want := map[string]map[string]string{
		"classifier": {
			"CLASSIFIER_HTTP_ADDR":           ":8071",
			"CLASSIFIER_DATABASE_URL":        "postgres://classifier:" + env["CLASSIFIER_DB_PASSWORD"] + "@postgres-classifier:5432/classifier?sslmode=disable",
			"CLASSIFIER_OUTBOX_DATABASE_URL": "postgres://classifier:" + env["CLASSIFIER_OUTBOX_DB_PASSWORD"] + "@postgres-publisher:5432/publisher?sslmode=disable",
			"ELASTICSEARCH_URL":              "http://elasticsearch:9200",
			"JWT_SECRET":                     env["JWT_SECRET"],
		},
		"publisher": {
			"PUBLISHER_HTTP_ADDR":    ":8070",
			"PUBLISHER_DATABASE_URL": "postgres://publisher:" + env["PUBLISHER_DB_PASSWORD"] + "@postgres-publisher:5432/publisher?sslmode=disable",
			"REDIS_URL":              "redis://publisher:" + env["REDIS_PUBLISHER_PASSWORD"] + "@redis:6379/0",
			"JWT_SECRET":             env["JWT_SECRET"],
		},
		"index-manager": {
			"INDEX_MANAGER_HTTP_ADDR":    ":8090",
			"INDEX_MANAGER_DATABASE_URL": "postgres://index_manager:" + env["INDEX_MANAGER_DB_PASSWORD"] + "@postgres-index-manager:5432/index_manager?sslmode=disable",
			"ELASTICSEARCH_URL":          "http://elasticsearch:9200",
			"JWT_SECRET":                 env["JWT_SECRET"],
		},
		"loader": {
			"ELASTICSEARCH_URL": "http://elasticsearch:9200",
		},
	}
	// A migrate job runs with exactly its service's configuration.
	want["classifier-migrate"] = want["classifier"]
	want["publisher-migrate"] = want["publisher"]
	for svc, vars := range want {
		for k, v := range vars {
			got := p.Services[svc].Environment[k]
			if got == nil || *got != v {
				t.Errorf("%s: %s = %v, want %q", svc, k, got, v)
			}
		}
		for _, k := range []string{"LOG_LEVEL", "LOG_FORMAT"} {
			if got := p.Services[svc].Environment[k]; got == nil || *got != env[k] {
				t.Errorf("%s: %s = %v, want %q from .env.example", svc, k, got, env[k])
			}
		}
	}
	if cmd := p.Services["loader"].Command; len(cmd) == 0 || cmd[0] != "/app/loader" || !slices.Contains(cmd, env["LOADER_COUNT"]) {
		t.Errorf("loader: command = %v, want /app/loader -count %s", cmd, env["LOADER_COUNT"])
	}
	if dep, ok := p.Services["loader"].DependsOn["elasticsearch"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Errorf("loader: must wait for a healthy elasticsearch")
	}
}

func TestJWTSecretFromEnvExampleIsLongEnough(t *testing.T) {
	if s := envExample(t)["JWT_SECRET"]; len(s) < 32 {
		t.Errorf(".env.example: JWT_SECRET is %d bytes, the services need at least 32", len(s))
	}
}

// Each secret is required: without it compose refuses to load, naming the variable.
func TestSecretsFailClosed(t *testing.T) {
	for _, name := range secrets {
		t.Run(name, func(t *testing.T) {
			env := envExample(t)
			delete(env, name)
			_, err := load(t, env)
			if err == nil {
				t.Fatalf("loaded without %s", name)
			}
			if !strings.Contains(err.Error(), "set "+name+" in .env") {
				t.Errorf("error does not name %s: %v", name, err)
			}
		})
	}
}

var interpolated = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-?+][^}]*)?\}`)

// .env.example lists, each with a comment, exactly the variables the compose file interpolates.
func TestEnvExampleDocumentsEveryInterpolatedVariable(t *testing.T) {
	raw, err := os.ReadFile(path(t, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]string{} // name -> modifier
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue // a comment may show the ${VAR:?...} syntax
		}
		for _, m := range interpolated.FindAllStringSubmatch(line, -1) {
			used[m[1]] = m[2]
		}
	}
	if len(used) == 0 {
		t.Fatal("no ${VAR} found in docker-compose.yml")
	}
	for _, name := range secrets {
		if mod, ok := used[name]; !ok || !strings.HasPrefix(mod, ":?") {
			t.Errorf("docker-compose.yml: secret %s must be interpolated as ${%s:?...}, got %q", name, name, mod)
		}
	}

	example, err := os.ReadFile(path(t, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(example), "\n")
	defined := map[string]bool{}
	for i, line := range lines {
		key, _, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		defined[key] = true
		if i == 0 || !strings.HasPrefix(lines[i-1], "#") {
			t.Errorf(".env.example: %s has no comment line above it", key)
		}
		if _, ok := used[key]; !ok {
			t.Errorf(".env.example: %s is not used by docker-compose.yml", key)
		}
	}
	// A service setting passed through with its default is documented in
	// docs/configuration.md (TestEveryDocumentedSettingReachesItsService) and need not be
	// repeated in .env.example.
	documented := map[string]bool{}
	for _, s := range documentedSettings(t) {
		documented[s.name] = true
	}
	for name := range used {
		if !defined[name] && !documented[name] {
			t.Errorf("docker-compose.yml interpolates %s, which neither .env.example nor docs/configuration.md lists", name)
		}
	}
}

// The build context is the repository root; .dockerignore must send the workspace and the
// service modules, and keep secrets and unrelated trees out.
func TestDockerignore(t *testing.T) {
	f, err := os.Open(path(t, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	sent := []string{
		"go.work", "go.work.sum",
		"infrastructure/go.mod", "infrastructure/go.sum", "infrastructure/config/config.go",
		"classifier/go.mod", "classifier/cmd/classifier/main.go", "classifier/cmd/loader/main.go",
		"classifier/internal/migrations/0001_init.up.sql",
		"publisher/go.mod", "publisher/cmd/publisher/main.go",
		"index-manager/go.mod", "index-manager/cmd/index-manager/main.go",
		"dashboard/package.json", "dashboard/package-lock.json", "dashboard/src/main.ts", "dashboard/server/go.mod",
	}
	kept := []string{
		".env", ".env.example", ".git/config", "docker-compose.yml", "docs/configuration.md",
		"dashboard/node_modules/x/index.js", "dashboard/dist/index.html", "bin/classifier", "deploy/composetest/go.mod",
		"classifier/internal/rules/engine_test.go", "publisher/.env",
	}
	for _, p := range sent {
		if excluded, err := pm.MatchesOrParentMatches(p); err != nil || excluded {
			t.Errorf(".dockerignore: %s is not sent to the builder (err %v)", p, err)
		}
	}
	for _, p := range kept {
		if excluded, err := pm.MatchesOrParentMatches(p); err != nil || !excluded {
			t.Errorf(".dockerignore: %s is sent to the builder (err %v)", p, err)
		}
	}
}

// serviceDockerfile is the one Dockerfile of the Go services; build arguments choose the
// service.
const serviceDockerfile = "deploy/Dockerfile.service"

// The loader cannot see a Dockerfile's contents; check the conventions the compose file
// relies on with plain text: alpine runtime with busybox wget, user 10001, the port and the
// binary taken from the build arguments.
func TestServiceDockerfile(t *testing.T) {
	raw, err := os.ReadFile(path(t, serviceDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	for _, want := range []string{
		"ARG GO_IMAGE=golang:1.26-bookworm",
		"FROM ${GO_IMAGE} AS build",
		"ARG SERVICE",
		"ARG BINARIES",
		"ARG PORT",
		"COPY go.work go.work.sum* ./",
		"COPY infrastructure/go.mod infrastructure/go.sum* ./infrastructure/",
		"COPY ${SERVICE}/go.mod ${SERVICE}/go.sum* ./${SERVICE}/",
		"go mod download",
		"CGO_ENABLED=0",
		"go build -trimpath -ldflags='-s -w' -o /out/$bin ./$SERVICE/cmd/$bin",
		"ARG RUNTIME_IMAGE=alpine:3.20",
		"FROM ${RUNTIME_IMAGE}",
		"USER 10001:10001",
		"EXPOSE ${PORT}",
		"SERVICE_PORT=${PORT}",
		"HEALTHCHECK",
		`"http://127.0.0.1:${SERVICE_PORT}/health"`,
		`CMD exec "/app/${SERVICE_NAME}"`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("%s: missing %q", serviceDockerfile, want)
		}
	}
	// Module files are copied (and downloaded) before the sources.
	if strings.Index(df, "go mod download") > strings.Index(df, "COPY ${SERVICE}/ ") {
		t.Errorf("%s: sources copied before go mod download", serviceDockerfile)
	}
	// No service keeps a Dockerfile of its own beside the shared one.
	for name := range goServices {
		if _, err := os.Stat(path(t, name+"/Dockerfile")); err == nil {
			t.Errorf("%s/Dockerfile exists: the Go services build from %s", name, serviceDockerfile)
		}
	}
}

// Every service built from the shared Dockerfile gets the build arguments of its own
// service: SERVICE its module, PORT the port of its health check, and BINARIES every
// program its command runs.
func TestServiceBuildArgs(t *testing.T) {
	p := project(t)
	built := map[string]bool{}
	for name, s := range p.Services {
		if s.Build == nil || s.Build.Dockerfile != serviceDockerfile {
			continue
		}
		arg := func(a string) string {
			if v := s.Build.Args[a]; v != nil {
				return *v
			}
			return ""
		}
		svc := arg("SERVICE")
		built[svc] = true
		port, ok := goServices[svc]
		if !ok {
			t.Errorf("%s: build arg SERVICE = %q, want one of the Go services", name, svc)
			continue
		}
		if got := arg("PORT"); got != strconv.Itoa(int(port)) {
			t.Errorf("%s: build arg PORT = %q, want %d (the port %s listens on)", name, got, port, svc)
		}
		if img := "north-cloud/" + svc + ":dev"; s.Image != img {
			t.Errorf("%s: built from SERVICE=%s but tagged %q, want %q", name, svc, s.Image, img)
		}
		binaries := strings.Fields(arg("BINARIES"))
		if len(binaries) == 0 {
			binaries = []string{svc}
		}
		if !slices.Contains(binaries, svc) {
			t.Errorf("%s: BINARIES %v leave out the service's own binary %s (the image's CMD)", name, binaries, svc)
		}
		for _, b := range binaries {
			if _, err := os.Stat(path(t, svc+"/cmd/"+b)); err != nil {
				t.Errorf("%s: BINARIES names %s, but %s/cmd/%s: %v", name, b, svc, b, err)
			}
		}
		if len(s.Command) > 0 {
			if bin, ok := strings.CutPrefix(s.Command[0], "/app/"); !ok || !slices.Contains(binaries, bin) {
				t.Errorf("%s: command %v runs a program the image does not build (BINARIES %v)", name, s.Command, binaries)
			}
		}
	}
	for svc := range goServices {
		if !built[svc] {
			t.Errorf("no service of docker-compose.yml builds %s from %s", svc, serviceDockerfile)
		}
	}
}

// The dashboard image builds the Vue app and the Go server in their own
// stages and runs as non-root on :3000, like the service images.
func TestDashboardDockerfile(t *testing.T) {
	raw, err := os.ReadFile(path(t, "dashboard/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	for _, want := range []string{
		"ARG NODE_IMAGE=node:20-bookworm-slim",
		"FROM ${NODE_IMAGE} AS web",
		"COPY dashboard/package.json dashboard/package-lock.json ./",
		"RUN npm ci",
		"RUN npm run build",
		"FROM ${GO_IMAGE} AS build",
		"CGO_ENABLED=0",
		"COPY --from=web /web/dist /app/dist",
		"FROM ${RUNTIME_IMAGE}",
		"USER 10001:10001",
		"EXPOSE 3000",
		"http://127.0.0.1:3000/health",
		`CMD ["/app/dashboard"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("dashboard/Dockerfile: missing %q", want)
		}
	}
	if strings.Index(df, "RUN npm ci") > strings.Index(df, "COPY dashboard/ ./") {
		t.Error("dashboard/Dockerfile: sources copied before npm ci")
	}
}

// scaled are the services `docker compose up --scale classifier=3 --scale publisher=2`
// runs several of, with the replica count that must work with nothing else changed.
var scaled = map[string]int{"classifier": 3, "publisher": 2}

// portRange parses a published port or range ("8071" or "8071-8073").
func portRange(published string) (first, last int, err error) {
	a, b, isRange := strings.Cut(published, "-")
	if first, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return first, first, nil
	}
	last, err = strconv.Atoi(b)
	return first, last, err
}

// Scaling the classifier to 3 and the publisher to 2 needs nothing else: no fixed container
// name, hostname or replica id (the classifier's CLASSIFIER_ID defaults to <hostname>-<pid>,
// and each container's hostname is its own id), one loopback host port per replica in ranges
// that no other published port overlaps, and Prometheus scraping every replica (DNS service
// discovery of the service name) rather than one address.
func TestServicesScaleWithDistinctIdentities(t *testing.T) {
	p := project(t)
	type span struct {
		service     string
		first, last int
	}
	var spans []span
	for name, s := range p.Services {
		for _, port := range s.Ports {
			first, last, err := portRange(port.Published)
			if err != nil {
				t.Errorf("%s: published port %q: %v", name, port.Published, err)
				continue
			}
			spans = append(spans, span{name, first, last})
		}
	}
	for name, replicas := range scaled {
		s, ok := p.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		if s.ContainerName != "" || s.Hostname != "" {
			t.Errorf("%s: container_name %q, hostname %q: every replica would share them", name, s.ContainerName, s.Hostname)
		}
		for _, k := range []string{"CLASSIFIER_ID", "HOSTNAME"} {
			if v, ok := s.Environment[k]; ok {
				t.Errorf("%s: environment sets %s=%v for every replica alike", name, k, v)
			}
		}
		if s.Scale != nil && *s.Scale > 1 {
			t.Errorf("%s: scale %d in the file; the default is one replica, --scale adds more", name, *s.Scale)
		}
		if len(s.Ports) != 1 {
			t.Errorf("%s: %d port entries, want one (a range)", name, len(s.Ports))
			continue
		}
		first, last, err := portRange(s.Ports[0].Published)
		if err == nil && last-first+1 < replicas {
			t.Errorf("%s: host ports %q give %d replicas a port, want at least %d", name, s.Ports[0].Published, last-first+1, replicas)
		}
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.first <= b.last && b.first <= a.last {
				t.Errorf("host ports of %s (%d-%d) and %s (%d-%d) overlap", a.service, a.first, a.last, b.service, b.first, b.last)
			}
		}
	}

	raw, err := os.ReadFile(path(t, "deploy/prometheus/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []any  `yaml:"static_configs"`
			DNSSDConfigs  []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  uint32   `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &prom); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	for name := range scaled {
		found := false
		for _, sc := range prom.ScrapeConfigs {
			if sc.JobName != name {
				continue
			}
			found = true
			ok := len(sc.StaticConfigs) == 0 && len(sc.DNSSDConfigs) == 1 && sc.DNSSDConfigs[0].Type == "A" &&
				slices.Equal(sc.DNSSDConfigs[0].Names, []string{name}) && sc.DNSSDConfigs[0].Port == goServices[name]
			if !ok {
				t.Errorf("prometheus.yml job %s: %+v, want dns_sd_configs type A of %q on port %d (every replica)", name, sc, name, goServices[name])
			}
		}
		if !found {
			t.Errorf("prometheus.yml has no job %s", name)
		}
	}
}

// Prometheus runs without its lifecycle and admin APIs, in compose and natively: with them,
// anything that reaches its port could stop it (POST /-/quit), swap its configuration
// (/-/reload) or delete its series, with no role and no audit row. A configuration is
// reloaded with SIGHUP (docs/runbook.md).
func TestPrometheusWithoutLifecycleOrAdminAPI(t *testing.T) {
	forbidden := []string{"--web.enable-lifecycle", "--web.enable-admin-api"}
	for _, arg := range project(t).Services["prometheus"].Command {
		for _, f := range forbidden {
			if strings.HasPrefix(arg, f) {
				t.Errorf("docker-compose.yml: prometheus runs with %s", arg)
			}
		}
	}
	raw, err := os.ReadFile(path(t, "scripts/run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range forbidden {
		if strings.Contains(string(raw), f) {
			t.Errorf("scripts/run.sh starts prometheus with %s", f)
		}
	}
}
