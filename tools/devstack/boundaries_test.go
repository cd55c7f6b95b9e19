package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"quarters.dev/tools/devstack/services"
)

// TestServicesBuildFromTheirModuleAndPkgAlone builds every service the way its
// container image is built: from its own module and pkg, without the
// workspace. Its module graph must hold nothing of the dev stack.
func TestServicesBuildFromTheirModuleAndPkgAlone(t *testing.T) {
	wd, _ := os.Getwd()
	root, err := services.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := filepath.Glob(filepath.Join(root, "services", "*", "go.mod"))
	if err != nil || len(mods) == 0 {
		t.Fatalf("no service modules under %s/services (%v)", root, err)
	}
	banned := []string{"github.com/FerretDB/", "github.com/twmb/franz-go/pkg/kfake", "quarters.dev/tools"}
	for _, mod := range mods {
		dir := filepath.Dir(mod)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("go", args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("GOWORK=off go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
				}
				return string(out)
			}
			run("build", "./...")
			for _, line := range strings.Split(run("list", "-m", "all"), "\n") {
				for _, b := range banned {
					if strings.HasPrefix(line, b) {
						t.Errorf("the module graph of %s holds %q: a service must not depend on the dev stack", dir, line)
					}
				}
			}
		})
	}
}
