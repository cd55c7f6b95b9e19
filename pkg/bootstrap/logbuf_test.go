package bootstrap

import (
	"bytes"
	"strings"
	"sync"
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
