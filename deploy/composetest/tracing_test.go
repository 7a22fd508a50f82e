package composetest

import "testing"

// The stack runs a trace viewer and the services export to it: Jaeger receives OTLP/HTTP,
// every Go service's OTEL_EXPORTER_OTLP_ENDPOINT points at it by default, an empty value
// turns tracing off, and the offline override (no stand-in) leaves Jaeger to its profile.
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

	offline := loadFiles(t, envExample(t), "docker-compose.yml", offlineOverride)
	if _, active := offline.Services["jaeger"]; active {
		t.Error("jaeger runs with the offline override; it has no stand-in and belongs to a profile")
	}
}
