package composetest

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// officialImages are the images a user with a registry gets, unless a variable replaces one.
var officialImages = map[string]struct{ variable, image string }{
	"postgres-classifier":    {"POSTGRES_IMAGE", "postgres:15"},
	"postgres-publisher":     {"POSTGRES_IMAGE", "postgres:15"},
	"postgres-index-manager": {"POSTGRES_IMAGE", "postgres:15"},
	"redis":                  {"REDIS_IMAGE", "redis:7-alpine"},
	"elasticsearch":          {"ELASTICSEARCH_IMAGE", "docker.elastic.co/elasticsearch/elasticsearch:8.19.21"},
	"prometheus":             {"PROMETHEUS_IMAGE", "prom/prometheus:v3.5.0"},
	"alertmanager":           {"ALERTMANAGER_IMAGE", "prom/alertmanager:v0.28.1"},
	"grafana":                {"GRAFANA_IMAGE", "grafana/grafana:12.1.1"},
	"jaeger":                 {"JAEGER_IMAGE", "jaegertracing/all-in-one:1.76.0"},
}

// officialBuildArgs are the base images of the service builds (the Dockerfiles' defaults).
var officialBuildArgs = map[string]string{
	"GO_IMAGE":      "golang:1.26-bookworm",
	"RUNTIME_IMAGE": "alpine:3.20",
	"NODE_IMAGE":    "node:20-bookworm-slim",
}

const offlineOverride = "deploy/offline/compose.offline.yml"

func loadFiles(t *testing.T, env map[string]string, files ...string) *types.Project {
	t.Helper()
	var list, paths []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	for _, f := range files {
		paths = append(paths, path(t, f))
	}
	opts, err := cli.NewProjectOptions(paths, cli.WithWorkingDirectory(path(t, ".")), cli.WithEnv(list))
	if err != nil {
		t.Fatalf("project options: %v", err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load %v: %v", files, err)
	}
	return p
}

// wantArgs: the build args each built service gets (NODE_IMAGE for the dashboard only).
func checkBuildArgs(t *testing.T, p *types.Project, want func(arg string) string) {
	t.Helper()
	built := 0
	for name, s := range p.Services {
		if s.Build == nil {
			continue
		}
		built++
		args := []string{"GO_IMAGE", "RUNTIME_IMAGE"}
		if name == "dashboard" {
			args = append(args, "NODE_IMAGE")
		}
		for _, a := range args {
			v := s.Build.Args[a]
			if v == nil || *v != want(a) {
				t.Errorf("%s: build arg %s = %v, want %s", name, a, v, want(a))
			}
		}
	}
	if built != 7 {
		t.Errorf("%d services are built, want 7 (3 services, 2 migrations, loader, dashboard)", built)
	}
}

// A user with a registry changes nothing and gets the official images.
func TestOfficialImagesByDefault(t *testing.T) {
	p := project(t)
	for name, want := range officialImages {
		if got := p.Services[name].Image; got != want.image {
			t.Errorf("%s: image = %q, want %q", name, got, want.image)
		}
	}
	checkBuildArgs(t, p, func(a string) string { return officialBuildArgs[a] })
}

// Each image and base image can be replaced through its variable (.env or the shell).
func TestImageVariables(t *testing.T) {
	env := envExample(t)
	for _, o := range officialImages {
		env[o.variable] = "mirror.example/" + strings.ToLower(o.variable)
	}
	for a := range officialBuildArgs {
		env[a] = "mirror.example/" + strings.ToLower(a)
	}
	p := loadFiles(t, env, "docker-compose.yml")
	for name, o := range officialImages {
		if got, want := p.Services[name].Image, env[o.variable]; got != want {
			t.Errorf("%s: image = %q with %s set, want %q", name, got, o.variable, want)
		}
	}
	checkBuildArgs(t, p, func(a string) string { return env[a] })
}

// The offline override selects build-images.sh's stand-ins for every image that would be
// pulled, and leaves Grafana (no stand-in) to its profile.
func TestOfflineOverride(t *testing.T) {
	p := loadFiles(t, envExample(t), "docker-compose.yml", offlineOverride)
	script, err := os.ReadFile(path(t, "deploy/offline/build-images.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// Tags the script builds or tags.
	built := func(tag string) bool { return strings.Contains(string(script), tag) }
	for name := range maps.Keys(officialImages) {
		if name == "grafana" {
			continue
		}
		img := p.Services[name].Image
		if !strings.HasPrefix(img, "north-cloud-offline/") || !built(img) {
			t.Errorf("%s: image %q is not a stand-in built by build-images.sh", name, img)
		}
	}
	if _, active := p.Services["grafana"]; active {
		t.Error("grafana runs with the offline override; it has no stand-in and belongs to a profile")
	}
	if _, ok := p.DisabledServices["grafana"]; !ok {
		t.Error("grafana is not kept as a disabled (profile) service")
	}
	// The service images are packed from what build-images.sh built on the host
	// (deploy/offline/apps/<image>) by Dockerfile.app on the busybox runtime stand-in: no
	// golang or node image is needed.
	packed := 0
	for name, s := range p.Services {
		if s.Build == nil {
			continue
		}
		packed++
		image := strings.TrimSuffix(strings.TrimPrefix(s.Image, "north-cloud/"), ":dev")
		if want := path(t, "deploy/offline/apps/"+image); s.Build.Context != want {
			t.Errorf("%s: build context %q, want %q", name, s.Build.Context, want)
		}
		if df := filepath.Join(s.Build.Context, s.Build.Dockerfile); df != path(t, "deploy/offline/Dockerfile.app") {
			t.Errorf("%s: Dockerfile %q, want deploy/offline/Dockerfile.app", name, df)
		}
		// Dockerfile.app has no CMD: the service must name its binary.
		if len(s.Command) == 0 {
			t.Errorf("%s: no command; Dockerfile.app packs any service and names no binary", name)
		}
		if v := s.Build.Args["RUNTIME_IMAGE"]; v == nil || *v != "north-cloud-offline/runtime:busybox" {
			t.Errorf("%s: build arg RUNTIME_IMAGE = %v, want the busybox stand-in", name, v)
		}
	}
	if packed != 7 {
		t.Errorf("%d services are built, want 7 (3 services, 2 migrations, loader, dashboard)", packed)
	}
	for _, want := range []string{"north-cloud-offline/runtime:busybox", "deploy/offline/apps", "-trimpath -ldflags='-s -w'"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("build-images.sh does not make %s", want)
		}
	}
	// The binaries are built as the service Dockerfiles build them.
	for _, df := range []string{serviceDockerfile, "dashboard/Dockerfile"} {
		raw, err := os.ReadFile(path(t, df))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "go build -trimpath -ldflags='-s -w'") || !strings.Contains(string(raw), "CGO_ENABLED=0") {
			t.Errorf("%s builds with other flags than build-images.sh's apps (CGO_ENABLED=0 -trimpath -ldflags='-s -w')", df)
		}
	}
}

// A `# syntax=` line makes every build pull its Dockerfile frontend from a registry.
func TestDockerfilesNeedNoFrontendImage(t *testing.T) {
	for _, df := range []string{serviceDockerfile, "dashboard/Dockerfile"} {
		raw, err := os.ReadFile(path(t, df))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(strings.ReplaceAll(line, " ", ""), "#syntax=") {
				t.Errorf("%s: %q pulls a frontend image", df, line)
			}
		}
	}
}
