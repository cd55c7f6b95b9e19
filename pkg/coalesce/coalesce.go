// Package coalesce sends each HTTP/1.1 response of a net/http server in one
// write system call where net/http would make several.
//
// net/http writes a response through a 4 KiB buffer that cannot be resized,
// so an answer of 4.4 KB (one published listing) leaves in two write calls,
// and a list of 20 KB in six. On loopback and inside a cluster each write is
// a TCP segment the kernel carries through its whole stack, on the sending
// side and on the receiving one: the second write of a 4.4 KB answer costs a
// Go server about as much CPU as everything else it does for the request
// (BenchmarkResponse in this package; docs/benchmarks.md, "Authenticated
// reads"). Hand-written because net/http offers no way to size that buffer
// or to say where a response ends.
//
// A listener wrapped with Listen returns connections that hold what the
// server writes, up to MaxHeld bytes, and send it when net/http is done with
// the response. net/http marks that point on every connection it serves: it
// clears the write deadline right after the response's last byte is handed
// over, before it reads the next request. Held bytes are also sent, so that
// no one waits for them:
//
//   - before a read (a "100 Continue" waits for the body it asks for);
//   - when a write deadline is set, so a handler that streams sends what it
//     has flushed by moving its write deadline;
//   - before the write side is shut or the connection is closed;
//   - when the next write would take them past MaxHeld (a write of MaxHeld
//     or more goes out with them in one writev).
//
// A connection whose deadline is set as a whole (net/http does so when a
// handler hijacks it) sends what it holds and from then on writes through.
//
// Held bytes are sent under the write deadline in force when they were
// written, so a client that stops reading still frees the connection within
// the server's WriteTimeout.
package coalesce

import (
	"net"
	"sync"
	"time"
)

// MaxHeld bounds the bytes a connection holds before it writes: larger
// answers leave in writes of about this size.
const MaxHeld = 32 << 10

// Listen returns l with every accepted connection coalescing its writes.
func Listen(l net.Listener) net.Listener { return listener{l} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c}, nil
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, MaxHeld); return &b }}

// conn holds written bytes until a flush point. net/http writes from the
// serving goroutine and reads from it or from its background reader, so the
// held bytes are guarded by mu.
type conn struct {
	net.Conn
	mu   sync.Mutex
	held *[]byte
	// direct is set once the connection has left net/http (hijacked).
	direct bool
	// err is the first failed write: the bytes of a held write that was
	// acknowledged are lost, so every later write fails too.
	err error
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || len(p) == 0 {
		return 0, c.err
	}
	held := 0
	if c.held != nil {
		held = len(*c.held)
	}
	if held+len(p) <= MaxHeld && !c.direct {
		if c.held == nil {
			c.held = buffers.Get().(*[]byte)
		}
		*c.held = append(*c.held, p...)
		return len(p), nil
	}
	if held == 0 || c.direct {
		n, err := c.Conn.Write(p)
		c.err = err
		return n, err
	}
	if len(p) < MaxHeld {
		// Send what is held and hold p.
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		c.held = buffers.Get().(*[]byte)
		*c.held = append(*c.held, p...)
		return len(p), nil
	}
	// Both in one writev.
	bufs := net.Buffers{*c.held, p}
	n, err := bufs.WriteTo(c.Conn)
	c.release()
	if err != nil {
		c.err = err
		return int(max(n-int64(held), 0)), err
	}
	return len(p), nil
}

// Flush sends what the connection holds.
func (c *conn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

func (c *conn) flushLocked() error {
	if c.err != nil || c.held == nil {
		return c.err
	}
	_, err := c.Conn.Write(*c.held)
	c.release()
	c.err = err
	return err
}

func (c *conn) release() {
	*c.held = (*c.held)[:0]
	buffers.Put(c.held)
	c.held = nil
}

// Read sends what is held before it waits for the client, who may be
// waiting for it. A read of one byte does not: that is net/http watching,
// while a handler runs, for the client closing the connection, and sending
// then would split the response being written.
func (c *conn) Read(p []byte) (int, error) {
	if len(p) != 1 {
		if err := c.Flush(); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

// SetWriteDeadline sends what is held under the deadline in force, then
// sets the new one. net/http clears the write deadline after every
// response: that is where a response's bytes leave.
func (c *conn) SetWriteDeadline(t time.Time) error {
	err := c.Flush()
	if derr := c.Conn.SetWriteDeadline(t); err == nil {
		err = derr
	}
	return err
}

// SetDeadline sends what is held and makes every later write go straight
// through: net/http sets the whole deadline only when it hands the
// connection to a handler that hijacks it.
func (c *conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	err := c.flushLocked()
	c.direct = true
	c.mu.Unlock()
	if derr := c.Conn.SetDeadline(t); err == nil {
		err = derr
	}
	return err
}

// CloseWrite sends what is held and shuts the write side, as net/http does
// before closing a connection whose request body it did not read.
func (c *conn) CloseWrite() error {
	err := c.Flush()
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		if cerr := cw.CloseWrite(); err == nil {
			err = cerr
		}
	}
	return err
}

func (c *conn) Close() error {
	c.mu.Lock()
	_ = c.flushLocked()
	if c.held != nil {
		c.release()
	}
	c.mu.Unlock()
	return c.Conn.Close()
}
