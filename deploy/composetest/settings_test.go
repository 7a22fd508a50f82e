package composetest

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A documented setting is one row of a service's table in docs/configuration.md.
type setting struct {
	name    string
	section string
	// def is the documented default when it is one literal (`2s`), else "".
	def string
}

// settingSections maps a section of docs/configuration.md to the compose services that read
// its variables.
var settingSections = map[string][]string{
	"Shared by every service": {"classifier", "publisher", "index-manager"},
	"classifier":              {"classifier"},
	"publisher":               {"publisher"},
	"index-manager":           {"index-manager"},
	"dashboard":               {"dashboard"},
}

// composeOwned are the documented variables compose sets itself, to values of the
// container network, rather than passing the user's through: addresses, URLs, paths
// inside an image, and CLASSIFIER_ID (one value for every replica of a scaled service
// would make them one claimer; each container defaults to its own host name).
var composeOwned = map[string]bool{
	"ELASTICSEARCH_URL": true, "REDIS_URL": true,
	"CLASSIFIER_HTTP_ADDR": true, "CLASSIFIER_DATABASE_URL": true, "CLASSIFIER_OUTBOX_DATABASE_URL": true, "CLASSIFIER_ID": true,
	"PUBLISHER_HTTP_ADDR": true, "PUBLISHER_DATABASE_URL": true,
	"INDEX_MANAGER_HTTP_ADDR": true, "INDEX_MANAGER_DATABASE_URL": true, "INDEX_MANAGER_TRUSTED_PROXIES": true,
	"DASHBOARD_ADDR": true, "DASHBOARD_DIST": true,
	"CLASSIFIER_URL": true, "PUBLISHER_URL": true, "INDEX_MANAGER_URL": true, "PROMETHEUS_URL": true, "DASHBOARD_REDIS_URL": true,
	"ALERTMANAGER_URL": true,
}

var (
	sectionHeading = regexp.MustCompile(`^## (.+?)(?: \(.*\))?$`)
	settingRow     = regexp.MustCompile("^\\| (`[A-Z][A-Z0-9_]*`(?:, `[A-Z][A-Z0-9_]*`)*) \\| ([^|]*) \\|")
	backticked     = regexp.MustCompile("`([^`]*)`")
	literalDefault = regexp.MustCompile("^`([^`]*)`")
)

// documentedSettings reads the service variables of docs/configuration.md.
func documentedSettings(t *testing.T) []setting {
	t.Helper()
	raw, err := os.ReadFile(path(t, "docs/configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []setting
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if m := sectionHeading.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		if _, ok := settingSections[section]; !ok {
			continue
		}
		m := settingRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		def := ""
		if d := literalDefault.FindStringSubmatch(strings.TrimSpace(m[2])); d != nil {
			def = d[1]
		}
		for _, n := range backticked.FindAllStringSubmatch(m[1], -1) {
			out = append(out, setting{name: n[1], section: section, def: def})
		}
	}
	if len(out) < 50 {
		t.Fatalf("docs/configuration.md: found %d service variables, want the tables of every service", len(out))
	}
	return out
}

// Every variable docs/configuration.md documents for a service reaches that service's
// container: unset, with its documented default; set in the shell or .env, with the
// user's value. The runbook's `CLASSIFIER_SHADOW_MATCHER=token_index docker compose up -d
// classifier` relies on it.
func TestEveryDocumentedSettingReachesItsService(t *testing.T) {
	settings := documentedSettings(t)
	base := envExample(t)
	defaults := project(t)

	custom := maps.Clone(base)
	for _, s := range settings {
		if !composeOwned[s.name] {
			custom[s.name] = "user-value-of-" + s.name
		}
	}
	overridden, err := load(t, custom)
	if err != nil {
		t.Fatalf("load docker-compose.yml with every setting set: %v", err)
	}

	for _, s := range settings {
		if composeOwned[s.name] {
			continue
		}
		for _, svc := range settingSections[s.section] {
			got := overridden.Services[svc].Environment[s.name]
			if got == nil || *got != custom[s.name] {
				t.Errorf("%s: %s set by the user is not passed to the container (got %v)", svc, s.name, deref(got))
				continue
			}
			def := defaults.Services[svc].Environment[s.name]
			switch want := envOr(base, s.name, s.def); {
			case def == nil:
				t.Errorf("%s: %s missing from the container's environment", svc, s.name)
			case *def != want:
				t.Errorf("%s: %s = %q when unset, want the documented default %q", svc, s.name, *def, want)
			}
		}
	}
	// The migrate jobs run with their service's configuration.
	for job, svc := range map[string]string{"classifier-migrate": "classifier", "publisher-migrate": "publisher"} {
		if a, b := slices.Sorted(maps.Keys(overridden.Services[job].Environment)), slices.Sorted(maps.Keys(overridden.Services[svc].Environment)); !slices.Equal(a, b) {
			t.Errorf("%s's environment %v differs from %s's %v", job, a, svc, b)
		}
	}
}

// envOr is env's value of name (a value .env.example sets), else def.
func envOr(env map[string]string, name, def string) string {
	if v, ok := env[name]; ok {
		return v
	}
	return def
}

func deref(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}
