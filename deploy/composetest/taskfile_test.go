package composetest

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Taskfile.yml is what `scripts/task` reads first (`task run`, `task bench`): a YAML
// mistake in it (a `{{...}}` template inside a flow sequence reads as a
// mapping) stops every task. It parses, and the tasks the docs name exist.
func TestTaskfileParses(t *testing.T) {
	raw, err := os.ReadFile(path(t, "Taskfile.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Version string                    `yaml:"version"`
		Tasks   map[string]map[string]any `yaml:"tasks"`
	}
	if err := yaml.Unmarshal(raw, &tf); err != nil {
		t.Fatalf("Taskfile.yml does not parse: %v", err)
	}
	for _, name := range []string{"test", "bench", "build", "run", "services:up", "db:backup", "db:restore"} {
		if _, ok := tf.Tasks[name]; !ok {
			t.Errorf("Taskfile.yml has no task %q", name)
		}
	}
}
