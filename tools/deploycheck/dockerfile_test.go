package deploycheck

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

func parseDockerfile(t testing.TB) ([]instructions.Stage, []instructions.ArgCommand) {
	t.Helper()
	res, err := parser.Parse(bytes.NewReader(mustRead(t, repoPath(t, "Dockerfile"))))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile: %s", w.Short)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return stages, metaArgs
}

func stageNames(t testing.TB) map[string]bool {
	stages, _ := parseDockerfile(t)
	out := map[string]bool{}
	for _, s := range stages {
		out[s.Name] = true
	}
	return out
}

// TestDockerfile checks the one Dockerfile with BuildKit's own parser: a
// build stage for any service named by ARG SERVICE, from the repository
// root, and final stages (the default and `prebuilt`, for binaries built
// outside) that hold nothing but the binary and the CA bundle, run as a
// numeric non-root user and have no shell.
func TestDockerfile(t *testing.T) {
	stages, _ := parseDockerfile(t)
	byName := map[string]instructions.Stage{}
	for _, s := range stages {
		byName[s.Name] = s
	}
	build, ok := byName["build"]
	if !ok {
		t.Fatal("no build stage")
	}
	final := stages[len(stages)-1]
	prebuilt, ok := byName["prebuilt"]
	if !ok || final.Name == "prebuilt" {
		t.Fatal("want a prebuilt stage and a default final stage after it")
	}

	// The build stage takes SERVICE, builds a static binary without the
	// workspace, and copies only paths that exist from the repository root.
	var args []string
	var runs []string
	for _, c := range build.Commands {
		switch c := c.(type) {
		case *instructions.ArgCommand:
			for _, a := range c.Args {
				args = append(args, a.Key)
			}
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				runs = append(runs, kv.Key+"="+kv.Value)
			}
		case *instructions.RunCommand:
			runs = append(runs, strings.Join(c.CmdLine, " "))
		case *instructions.CopyCommand:
			for _, src := range c.SourcePaths {
				checkSourceExists(t, src)
			}
		}
	}
	if !contains(args, "SERVICE") {
		t.Errorf("the build stage does not declare ARG SERVICE")
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{"CGO_ENABLED=0", "GOWORK=off", "go build", "services/${SERVICE}"} {
		if !strings.Contains(all, want) {
			t.Errorf("the build stage lacks %q:\n%s", want, all)
		}
	}
	// The Go of the build image is at least what every service module asks for.
	goVersion := ""
	_, metaArgs := parseDockerfile(t)
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			if kv.Key == "GO_VERSION" && kv.Value != nil {
				goVersion = *kv.Value
			}
		}
	}
	mods, _ := filepath.Glob(repoPath(t, "services", "*", "go.mod"))
	for _, m := range append(mods, repoPath(t, "pkg", "go.mod")) {
		want := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(mustRead(t, m))
		if want == nil || versionLess(goVersion, string(want[1])) {
			t.Errorf("GO_VERSION %q is older than the go directive of %s", goVersion, m)
		}
	}

	for _, s := range []instructions.Stage{prebuilt, final} {
		if s.BaseName != "scratch" {
			t.Errorf("%s: FROM %s, want scratch", s.Name, s.BaseName)
		}
		var user string
		var entrypoint []string
		var copied []string
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.UserCommand:
				user = c.User
			case *instructions.EntrypointCommand:
				if !c.PrependShell {
					entrypoint = c.CmdLine
				}
			case *instructions.CopyCommand:
				copied = append(copied, c.DestPath)
				if s.Name == "prebuilt" {
					for _, src := range c.SourcePaths {
						if !strings.HasPrefix(src, "bin/image/") {
							t.Errorf("prebuilt copies %s, outside bin/image/", src)
						}
					}
				}
			case *instructions.RunCommand, *instructions.CmdCommand, *instructions.ShellCommand:
				t.Errorf("%s: %s in a final stage (there is no shell to run it)", s.Name, c.Name())
			}
		}
		if !regexp.MustCompile(`^[1-9][0-9]*(:[0-9]+)?$`).MatchString(user) {
			t.Errorf("%s: USER %q, want a numeric non-root user", s.Name, user)
		}
		if len(entrypoint) != 1 || !contains(copied, entrypoint[0]) {
			t.Errorf("%s: ENTRYPOINT %v, want the exec form of the copied binary (copied %v)", s.Name, entrypoint, copied)
		}
		if len(copied) != 2 || !contains(copied, "/etc/ssl/certs/ca-certificates.crt") {
			t.Errorf("%s copies %v, want the binary and the CA bundle only", s.Name, copied)
		}
	}
}

// checkSourceExists resolves a COPY source for the existing services and
// fails when it is missing from the repository root or excluded by
// .dockerignore.
func checkSourceExists(t *testing.T, src string) {
	t.Helper()
	mods, _ := filepath.Glob(repoPath(t, "services", "*", "main.go"))
	if len(mods) == 0 {
		t.Fatal("no services")
	}
	for _, m := range mods {
		svc := filepath.Base(filepath.Dir(m))
		p := strings.TrimSuffix(strings.ReplaceAll(src, "${SERVICE}", svc), "/")
		if _, err := os.Stat(repoPath(t, p)); err != nil {
			t.Errorf("COPY %s: %v (the build context is the repository root)", src, err)
		}
		if ignored(t, p) {
			t.Errorf("COPY %s: %s is excluded by .dockerignore", src, p)
		}
	}
}

func ignored(t testing.TB, path string) bool {
	t.Helper()
	f, err := os.Open(repoPath(t, ".dockerignore"))
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
	ok, err := pm.MatchesOrParentMatches(path)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestDockerignore keeps the build context to what an image needs.
func TestDockerignore(t *testing.T) {
	for _, p := range []string{"services/auth/main.go", "services/auth/go.mod", "pkg/go.mod", "pkg/httpx/httpx.go", "proto-events/go.mod", "bin/image/auth"} {
		if ignored(t, p) {
			t.Errorf("%s is excluded from the build context", p)
		}
	}
	for _, p := range []string{".git/HEAD", ".devstack/mongo/x", "tools/devstack/main.go", "charts/quarters/values.yaml", "services/auth/internal/ports/http_test.go", "bin/devstack", "docs/runbooks.md"} {
		if !ignored(t, p) {
			t.Errorf("%s is sent with the build context", p)
		}
	}
}

// versionLess compares dotted Go versions.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x = atoi(pa[i])
		}
		if i < len(pb) {
			y = atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}
