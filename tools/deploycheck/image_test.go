package deploycheck

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestImageBuildsFromAPrebuiltBinary builds the auth image with buildah, the
// way `make images` does where no base image can be pulled: the binary is
// built outside, the Dockerfile's `prebuilt` stage packages it FROM scratch.
// The image's config and content are then inspected.
func TestImageBuildsFromAPrebuiltBinary(t *testing.T) {
	buildah, err := exec.LookPath("buildah")
	if err != nil {
		t.Skip("buildah not on PATH (Debian package buildah; .ci/run installs it)")
	}
	const service = "auth"
	work := t.TempDir()
	ctx := filepath.Join(work, "context")
	bin := filepath.Join(ctx, "bin", "image")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The binary exactly as `make images` builds it.
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(bin, service), ".")
	build.Dir = repoPath(t, "services", service)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Skipf("no CA bundle on this machine: %v", err)
	}
	mustWrite(t, filepath.Join(bin, "ca-certificates.crt"), certs)
	mustWrite(t, filepath.Join(ctx, ".dockerignore"), mustRead(t, repoPath(t, ".dockerignore")))

	storage := []string{"--root", filepath.Join(work, "storage"), "--runroot", filepath.Join(work, "run"), "--storage-driver", "vfs"}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(buildah, append(storage, args...)...)
		cmd.Dir = work
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("buildah %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
	tag := "localhost/quarters/" + service + ":test"
	run("bud", "--isolation", "chroot", "--pull-never", "-f", repoPath(t, "Dockerfile"), "--target", "prebuilt", "--build-arg", "SERVICE="+service, "-t", tag, ctx)
	t.Cleanup(func() { exec.Command(buildah, append(storage, "rmi", "--all", "--force")...).Run() })

	var inspect struct {
		OCIv1 struct {
			Config struct {
				User       string   `json:"User"`
				Entrypoint []string `json:"Entrypoint"`
				Cmd        []string `json:"Cmd"`
				Env        []string `json:"Env"`
			} `json:"config"`
		} `json:"OCIv1"`
	}
	if err := json.Unmarshal(run("inspect", "--type", "image", tag), &inspect); err != nil {
		t.Fatal(err)
	}
	cfg := inspect.OCIv1.Config
	if !regexp.MustCompile(`^[1-9][0-9]*(:[0-9]+)?$`).MatchString(cfg.User) {
		t.Errorf("user %q, want a numeric non-root user", cfg.User)
	}
	if len(cfg.Entrypoint) != 1 || cfg.Entrypoint[0] != "/quarters" || len(cfg.Cmd) != 0 {
		t.Errorf("entrypoint %v cmd %v, want [/quarters] alone", cfg.Entrypoint, cfg.Cmd)
	}

	// The image's files: the binary and the CA bundle, nothing else (no
	// shell, no package manager).
	layout := filepath.Join(work, "layout")
	run("push", tag, "oci:"+layout)
	files, size := imageFiles(t, layout)
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "etc/ssl/certs/ca-certificates.crt quarters" {
		t.Errorf("image files %v, want the binary and the CA bundle only", names)
	}
	binSize := int64(len(files["quarters"]))
	if binSize == 0 || size > binSize+int64(len(certs))+1<<20 || size > 64<<20 {
		t.Errorf("image layers %d bytes for a %d-byte binary", size, binSize)
	}
	t.Logf("image %s: %d bytes of layers, binary %d bytes", tag, size, binSize)

	// The binary is static (no dynamic loader in a scratch image) and is the
	// service: run without configuration it names what it misses.
	exe := filepath.Join(work, "quarters")
	mustWrite(t, exe, files["quarters"])
	if err := os.Chmod(exe, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader")
		}
	}
	f.Close()
	out, err := exec.Command(exe).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "QUARTERS_MONGO_URI is required") {
		t.Errorf("the image's binary without configuration: %v\n%s", err, out)
	}
}

func mustWrite(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// imageFiles reads the regular files of the one image in an OCI layout and
// the total size of its layers.
func imageFiles(t *testing.T, layout string) (map[string][]byte, int64) {
	t.Helper()
	blob := func(digest string) []byte {
		return mustRead(t, filepath.Join(layout, "blobs", strings.Replace(digest, ":", string(filepath.Separator), 1)))
	}
	var index struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(mustRead(t, filepath.Join(layout, "index.json")), &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %+v", err, index)
	}
	var manifest struct {
		Layers []struct {
			Digest string `json:"digest"`
			Size   int64  `json:"size"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var size int64
	for _, l := range manifest.Layers {
		size += l.Size
		var r io.Reader = bytes.NewReader(blob(l.Digest))
		br := bufio.NewReader(r)
		if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			gz, err := gzip.NewReader(br)
			if err != nil {
				t.Fatal(err)
			}
			r = gz
		} else {
			r = br
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
			switch h.Typeflag {
			case tar.TypeReg:
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				files[name] = b
			case tar.TypeDir:
			default:
				files[name+" ("+string(h.Typeflag)+")"] = nil
			}
		}
	}
	return files, size
}
