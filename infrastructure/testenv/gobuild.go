package testenv

import (
	"fmt"
	"os"
	"os/exec"
)

// GoBuild compiles the packages pkgs of the Go module in dir into out (a
// directory, or a file for one main package) the way the project builds
// every binary that does not run under the race detector: each module on
// its own (GOWORK=off), CGO_ENABLED=0 and -trimpath, as scripts/build.sh, the
// container images and scripts/test.sh's vet stage do. One configuration
// means one compilation of every package: a test that built its binaries
// with its own flags (the race build's cgo, the workspace's versions)
// compiled every dependency and the standard library once more on a new
// machine.
func GoBuild(dir, out string, pkgs ...string) error {
	args := append([]string{"build", "-trimpath", "-o", out}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v in %s: %w\n%s", pkgs, dir, err, b)
	}
	return nil
}
