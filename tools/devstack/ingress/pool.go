package ingress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// poolTransport is the RoundTripper of the proxy for requests without a
// large body: each request borrows a kept-alive HTTP/1.1 connection for its
// whole exchange, writes itself with (*http.Request).Write and reads the
// answer with http.ReadResponse, and gives the connection back once the
// answer's body is read to its end.
//
// It exists because http.Transport costs the ingress more than half of its
// throughput on this machine: each of its connections runs a read and a
// write goroutine that hand every request and response over channels.
// tools/devstack/bench/ingress.sh measures both transports against nginx
// in the same run (docs/benchmarks.md, "Ingress").
//
// Large bodies (over expectContinueAbove, of unknown length, or sent with
// Expect) go through the standard transport, which waits for the service's
// go-ahead before sending them.
type poolTransport struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	large   http.RoundTripper
	maxIdle int
	// idleTimeout is poolIdleTimeout but in tests.
	idleTimeout time.Duration
	mu          sync.Mutex
	idle        map[string][]*poolConn
	closed      bool
}

type poolConn struct {
	net.Conn
	addr      string
	br        *bufio.Reader
	bw        *bufio.Writer
	reused    bool
	idleSince time.Time
}

// poolIdleTimeout retires a connection idle for longer, well before a
// service's own idle timeout (two minutes) could close it under a request
// that cannot be sent again.
const poolIdleTimeout = 30 * time.Second

func newPoolTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), large http.RoundTripper) *poolTransport {
	return &poolTransport{dial: dial, large: large, maxIdle: 1024, idleTimeout: poolIdleTimeout, idle: map[string][]*poolConn{}}
}

// errServiceHungUp is a connection the service closed before answering.
var errServiceHungUp = errors.New("the service closed the connection before answering")

func (t *poolTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.ContentLength > expectContinueAbove || req.ContentLength < 0 || req.Header.Get("Expect") != "" {
		return t.large.RoundTrip(req)
	}
	for {
		pc, err := t.get(req.Context(), req.URL.Host)
		if err != nil {
			return nil, err
		}
		res, sent, err := t.exchange(pc, req)
		if err == nil {
			return res, nil
		}
		_ = pc.Close()
		// A kept-alive connection may be closed by the service just as a
		// request goes out on it. Send again, on a new connection, only
		// what is safe to repeat and was not answered at all.
		if pc.reused && !sent && hungUp(err) && resendable(req) {
			continue
		}
		return nil, err
	}
}

// hungUp reports whether err says that the service closed the connection
// (and not, say, that it was too slow).
func hungUp(err error) bool {
	return errors.Is(err, errServiceHungUp) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// resendable reports whether req may be sent a second time: a method
// without side effects and no body.
func resendable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return req.Body == nil || req.Body == http.NoBody
	}
	return false
}

// exchange writes req on pc and reads the answer's head. answered reports
// whether any byte of an answer arrived.
func (t *poolTransport) exchange(pc *poolConn, req *http.Request) (res *http.Response, answered bool, err error) {
	if err := req.Write(pc.bw); err != nil {
		return nil, false, err
	}
	if err := pc.bw.Flush(); err != nil {
		return nil, false, err
	}
	if _, err := pc.br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) {
			err = errServiceHungUp
		}
		return nil, false, err
	}
	res, err = http.ReadResponse(pc.br, req)
	if err != nil {
		return nil, true, err
	}
	keep := !res.Close && !req.Close
	if res.Body == http.NoBody {
		if keep {
			t.put(pc)
		} else {
			_ = pc.Close()
		}
		return res, true, nil
	}
	res.Body = &pooledBody{ReadCloser: res.Body, pc: pc, t: t, keep: keep}
	return res, true, nil
}

func (t *poolTransport) get(ctx context.Context, addr string) (*poolConn, error) {
	t.mu.Lock()
	if l := t.idle[addr]; len(l) > 0 {
		pc := l[len(l)-1]
		if time.Since(pc.idleSince) < t.idleTimeout {
			t.idle[addr] = l[:len(l)-1]
			t.mu.Unlock()
			pc.reused = true
			return pc, nil
		}
		// The most recently used connection is too old, so are the rest.
		delete(t.idle, addr)
		t.mu.Unlock()
		for _, old := range l {
			_ = old.Close()
		}
	} else {
		t.mu.Unlock()
	}
	c, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &poolConn{Conn: c, addr: addr, br: bufio.NewReaderSize(c, 16<<10), bw: bufio.NewWriterSize(c, 16<<10)}, nil
}

func (t *poolTransport) put(pc *poolConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || len(t.idle[pc.addr]) >= t.maxIdle || pc.br.Buffered() > 0 {
		_ = pc.Close()
		return
	}
	pc.idleSince = time.Now()
	t.idle[pc.addr] = append(t.idle[pc.addr], pc)
}

// CloseIdleConnections closes every idle connection, and those given back
// later.
func (t *poolTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.closed = map[string][]*poolConn{}, true
	t.mu.Unlock()
	for _, l := range idle {
		for _, pc := range l {
			_ = pc.Close()
		}
	}
	if c, ok := t.large.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// pooledBody gives its connection back when the answer's body has been
// read to its end, and closes it otherwise.
type pooledBody struct {
	io.ReadCloser
	pc   *poolConn
	t    *poolTransport
	keep bool
	done bool
}

func (b *pooledBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.release(b.keep)
	case err != nil:
		b.release(false)
	}
	return n, err
}

func (b *pooledBody) Close() error {
	if !b.done {
		b.release(false)
	}
	return nil
}

func (b *pooledBody) release(keep bool) {
	b.done = true
	if keep {
		b.t.put(b.pc)
	} else {
		_ = b.pc.Close()
	}
}
