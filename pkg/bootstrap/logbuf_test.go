package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func TestLogBufferBatchesAndLosesNothing(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	b := newLogBuffer(out)
	for i := range 1000 {
		_, _ = b.Write([]byte("line " + strings.Repeat("x", i%50) + "\n"))
	}
	deadline := time.Now().Add(2 * time.Second)
	for strings.Count(out.String(), "\n") < 1000 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := strings.Count(out.String(), "\n"); got != 1000 {
		t.Fatalf("%d lines written within %v, want 1000", got, flushEvery)
	}
	if out.n > 10 {
		t.Fatalf("%d writes for 1000 lines; want them batched", out.n)
	}
	_, _ = b.Write([]byte("last\n"))
	b.Close()
	if !strings.HasSuffix(out.String(), "last\n") {
		t.Fatal("Close did not write the last line")
	}
}

func TestWriteThroughWritesAtOnceAfterWaitingLines(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	b := newLogBuffer(out)
	defer b.Close()
	_, _ = b.Write([]byte("access 1\n"))
	_, _ = writeThrough{b}.Write([]byte("error\n"))
	if got := out.String(); got != "access 1\nerror\n" {
		t.Fatalf("written at once: %q, want the waiting access line and the error, in order", got)
	}
}

// crashEnv makes the test binary a service that logs an error and is killed
// at once, before any timer could flush a buffer.
const crashEnv = "QUARTERS_TEST_LOG_THEN_CRASH"

func TestErrorLineSurvivesKill(t *testing.T) {
	if os.Getenv(crashEnv) == "1" {
		Run("crashy", nil, func(_ context.Context, rt *Runtime) (*App, error) {
			_, _ = rt.AccessLog.Write([]byte(`{"msg":"access","path":"/before-crash"}` + "\n"))
			rt.Log.Warn("store slow", "after", "3s")
			rt.Log.Error("cannot reach the store", "error", "connection refused")
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		})
		return
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestErrorLineSurvivesKill$")
	cmd.Env = append(os.Environ(), crashEnv+"=1", "QUARTERS_HTTP_ADDR=127.0.0.1:0", "QUARTERS_OPS_ADDR=127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper did not die by SIGKILL: %v\n%s", err, stderr.String())
	}
	got := stderr.String()
	access := strings.Index(got, `"path":"/before-crash"`)
	warn := strings.Index(got, `"msg":"store slow"`)
	fatal := strings.Index(got, `"msg":"cannot reach the store"`)
	if access < 0 || warn < 0 || fatal < 0 || !(access < warn && warn < fatal) {
		t.Fatalf("after the kill the log holds, in order, the access line, the warning and the error? got:\n%s", got)
	}
	if !strings.Contains(got, `"level":"ERROR"`) || !strings.Contains(got, `"error":"connection refused"`) {
		t.Fatalf("error line incomplete:\n%s", got)
	}
}
