package ingress

import (
	"bufio"
	"net"
	"sync"
	"time"
)

// An upstream is one service's API address with a pool of kept-alive
// HTTP/1.1 connections. Requests borrow a connection for their whole
// exchange and give it back once the response body has been read to its end,
// so no goroutine other than the request's own ever touches it.
type upstream struct {
	name string
	addr string

	mu     sync.Mutex
	idle   []*upConn
	closed bool
}

type upConn struct {
	nc       net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	idleFrom time.Time
	reused   bool
	deadline time.Time
}

// extendDeadline makes sure at least half of timeout is left before the
// connection's deadline. Moving a deadline costs a runtime timer update, so
// a busy connection moves it once per half timeout instead of per request;
// a stalled service or stalled body still fails within timeout.
func (c *upConn) extendDeadline(timeout time.Duration) {
	now := time.Now()
	if c.deadline.Sub(now) >= timeout/2 {
		return
	}
	c.deadline = now.Add(timeout)
	c.nc.SetDeadline(c.deadline)
}

const (
	// maxIdlePerUpstream bounds the idle pool; it is far above the number of
	// concurrent requests the dev stack or the benchmark makes.
	maxIdlePerUpstream = 1024
	// maxIdleAge retires connections before a service's own idle timeout
	// could close them under a request.
	maxIdleAge = 30 * time.Second
	ioBufSize  = 16 << 10
)

var dialer = net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}

// get returns an idle connection, or dials a new one.
func (u *upstream) get() (*upConn, error) {
	now := time.Now()
	u.mu.Lock()
	for n := len(u.idle); n > 0; n = len(u.idle) {
		c := u.idle[n-1]
		u.idle[n-1] = nil
		u.idle = u.idle[:n-1]
		if now.Sub(c.idleFrom) < maxIdleAge {
			u.mu.Unlock()
			c.reused = true
			return c, nil
		}
		u.mu.Unlock()
		c.nc.Close()
		u.mu.Lock()
	}
	u.mu.Unlock()
	return u.dial()
}

func (u *upstream) dial() (*upConn, error) {
	nc, err := dialer.Dial("tcp", u.addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &upConn{nc: nc, br: bufio.NewReaderSize(nc, ioBufSize), bw: bufio.NewWriterSize(nc, ioBufSize)}, nil
}

// put gives a connection back after a complete exchange.
func (u *upstream) put(c *upConn) {
	c.idleFrom = time.Now()
	u.mu.Lock()
	if u.closed || len(u.idle) >= maxIdlePerUpstream {
		u.mu.Unlock()
		c.nc.Close()
		return
	}
	u.idle = append(u.idle, c)
	u.mu.Unlock()
}

// close drops the idle connections; connections in use are closed by their
// requests when they come back.
func (u *upstream) close() {
	u.mu.Lock()
	u.closed = true
	idle := u.idle
	u.idle = nil
	u.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}
