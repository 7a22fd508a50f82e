package composetest

import (
	"os"
	"strings"
	"testing"
)

// The stack runs a trace viewer and the services export to it: Jaeger receives OTLP/HTTP,
// every Go service's OTEL_EXPORTER_OTLP_ENDPOINT points at it by default, an empty value
// turns tracing off, and the offline override runs the stand-in build-images.sh builds.
func TestServicesExportTracesToJaeger(t *testing.T) {
	p := project(t)
	jaeger, ok := p.Services["jaeger"]
	if !ok {
		t.Fatal("no jaeger service")
	}
	if v := jaeger.Environment["COLLECTOR_OTLP_ENABLED"]; v == nil || *v != "true" {
		t.Errorf("jaeger: COLLECTOR_OTLP_ENABLED = %v, want true", deref(v))
	}
	services := []string{"classifier", "publisher", "index-manager"}
	for _, svc := range services {
		if v := p.Services[svc].Environment["OTEL_EXPORTER_OTLP_ENDPOINT"]; v == nil || *v != "http://jaeger:4318" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT = %v, want http://jaeger:4318", svc, deref(v))
		}
	}

	env := envExample(t)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = ""
	off, err := load(t, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range services {
		if v := off.Services[svc].Environment["OTEL_EXPORTER_OTLP_ENDPOINT"]; v == nil || *v != "" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT = %v with the variable set empty, want empty (tracing off)", svc, deref(v))
		}
	}

	// The offline override runs Jaeger's stand-in: the official image's program and version,
	// built from deploy/offline/jaeger/go.mod by build-images.sh.
	offline := loadFiles(t, envExample(t), "docker-compose.yml", offlineOverride)
	j, active := offline.Services["jaeger"]
	if !active {
		t.Fatal("jaeger does not run with the offline override; build-images.sh builds its stand-in")
	}
	version := strings.TrimPrefix(officialImages["jaeger"].image, "jaegertracing/all-in-one:")
	if want := "north-cloud-offline/jaeger:" + version; j.Image != want {
		t.Errorf("jaeger: image %q with the offline override, want %q", j.Image, want)
	}
	mod, err := os.ReadFile(path(t, "deploy/offline/jaeger/go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ntool github.com/jaegertracing/jaeger/cmd/all-in-one\n", "\tgithub.com/jaegertracing/jaeger v" + version + " "} {
		if !strings.Contains(string(mod), want) {
			t.Errorf("deploy/offline/jaeger/go.mod has no %q: the stand-in is not the official image's program and version", want)
		}
	}
	// The services' spans reach it: compose-test.sh starts it and reads a document's trace.
	script, err := os.ReadFile(path(t, "scripts/compose-test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"JAEGER_PORT=", "prometheus jaeger)", `step "jaeger: a document's trace" jaeger`} {
		if !strings.Contains(string(script), want) {
			t.Errorf("scripts/compose-test.sh has no %q: the compose stage does not check the traces", want)
		}
	}
}
