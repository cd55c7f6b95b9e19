package bootstrap

import (
	"io"
	"sync"
	"time"
)

// logBuffer batches access log lines into few writes: a write system call per
// access log line costs a busy service a tenth of its CPU. Lines wait at most
// flushEvery, the buffer is written early when it fills, and Close writes the
// rest, so a stopping service loses nothing.
//
// Every other log line (warnings and errors above all) goes through
// WriteThrough, which writes it at once, after the access lines waiting
// before it: a process that crashes right after logging why still leaves
// that line behind, and the lines stay in order.
type logBuffer struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	stop chan struct{}
	done chan struct{}
}

const (
	logBufferSize = 64 << 10
	flushEvery    = 100 * time.Millisecond
)

func newLogBuffer(w io.Writer) *logBuffer {
	b := &logBuffer{w: w, buf: make([]byte, 0, logBufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf)+len(p) > logBufferSize {
		b.flushLocked()
	}
	if len(p) > logBufferSize {
		return b.w.Write(p)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// WriteThrough writes p at once, together with the lines still waiting.
func (b *logBuffer) WriteThrough(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf)+len(p) <= logBufferSize {
		b.buf = append(b.buf, p...)
		b.flushLocked()
		return len(p), nil
	}
	b.flushLocked()
	return b.w.Write(p)
}

// writeThrough is the io.Writer of the process's own log lines.
type writeThrough struct{ b *logBuffer }

func (w writeThrough) Write(p []byte) (int, error) { return w.b.WriteThrough(p) }

func (b *logBuffer) flushLocked() {
	if len(b.buf) == 0 {
		return
	}
	// A failed write to stderr has nowhere to be reported.
	_, _ = b.w.Write(b.buf)
	b.buf = b.buf[:0]
}

func (b *logBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *logBuffer) loop() {
	defer close(b.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.Flush()
		}
	}
}

// Close stops the timer and writes what is left.
func (b *logBuffer) Close() {
	close(b.stop)
	<-b.done
	b.Flush()
}
