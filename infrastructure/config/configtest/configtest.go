// Package configtest reads the documented defaults of docs/configuration.md,
// so a service's tests can load its configuration with every documented
// default set explicitly, as docker-compose.yml passes them: a default the
// loader refuses when it is spelled out ("0s" for a setting that must be
// positive) stops the service in compose and nowhere else.
package configtest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

var (
	heading = regexp.MustCompile(`^## (.+?)(?: \(.*\))?$`)
	row     = regexp.MustCompile("^\\| (`[A-Z][A-Z0-9_]*`(?:, `[A-Z][A-Z0-9_]*`)*) \\| `([^`]*)`")
	name    = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
)

// Defaults returns the variables of the given sections of the
// configuration document at path whose default is one literal value, with
// that value. It fails the test when the document cannot be read or the
// sections hold no such variable.
func Defaults(t testing.TB, path string, sections ...string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	want := map[string]bool{}
	for _, s := range sections {
		want[s] = true
	}
	out := map[string]string{}
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			in = want[m[1]]
			continue
		}
		m := row.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			out[n[1]] = m[2]
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no documented defaults in sections %v", path, sections)
	}
	return out
}
