package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCtrlCStopsEverythingCleanly runs the dev stack as `make run` does,
// interrupts it once it is ready, and expects a clean exit with no service
// process left behind.
func TestCtrlCStopsEverythingCleanly(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "devstack")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "QUARTERS_LISTEN=127.0.0.1:0", "QUARTERS_DATA_DIR="+data, "QUARTERS_DEMO=0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var out strings.Builder
	ready := regexp.MustCompile(`^quarters ready: api http://127\.0\.0\.1:\d+/api/v1 `)
	deadline := time.After(5 * time.Minute)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("exited before ready:\n%s", out.String())
			}
			out.WriteString(l + "\n")
			if ready.MatchString(l) {
				break wait
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("not ready in time:\n%s", out.String())
		}
	}
	started := servicePIDs(t, data)
	if len(started) == 0 {
		t.Fatalf("no service process running:\n%s", out.String())
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for l := range lines {
			out.WriteString(l + "\n")
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after Ctrl-C: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("did not stop within a minute:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "stopped; data kept in") {
		t.Fatalf("no stop message:\n%s", out.String())
	}
	for _, pid := range started {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("service process %d still running after the stack stopped", pid)
		}
	}
}

// servicePIDs lists the processes running a service binary of the data dir.
func servicePIDs(t *testing.T, data string) []int {
	t.Helper()
	binDir := filepath.Join(data, "bin") + string(filepath.Separator)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to find service processes in")
	}
	var pids []int
	for _, e := range entries {
		pid := 0
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(exe, binDir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
