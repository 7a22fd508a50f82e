package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestInvalidSettingStopsStartup checks that every service refuses to start
// on a bad setting, exits with status 2 and names each offending variable.
func TestInvalidSettingStopsStartup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		binary string
		env    []string
		want   []string
	}{
		{"classifier", []string{"CLASSIFIER_CONCURRENCY=ten", "JWT_SECRET=short"},
			[]string{"CLASSIFIER_CONCURRENCY", "JWT_SECRET", "CLASSIFIER_DATABASE_URL"}},
		{"publisher", []string{"PUBLISHER_OUTBOX_POLL_INTERVAL=soon", "REDIS_URL=http://x"},
			[]string{"PUBLISHER_OUTBOX_POLL_INTERVAL", "REDIS_URL", "JWT_SECRET"}},
		{"index-manager", []string{"LOG_LEVEL=loud", "INDEX_MANAGER_HTTP_ADDR=nope"},
			[]string{"LOG_LEVEL", "INDEX_MANAGER_HTTP_ADDR", "INDEX_MANAGER_DATABASE_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.binary, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(binary(t, tt.binary))
			// A clean environment: only what the case sets.
			cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, tt.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit = %v, want status 2\n%s", err, out)
			}
			for _, name := range tt.want {
				if !strings.Contains(string(out), name) {
					t.Errorf("output does not name %s:\n%s", name, out)
				}
			}
		})
	}
}
