package ingress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"quarters.dev/pkg/jsonresp"
	"quarters.dev/pkg/reqid"
)

// newTransport returns the HTTP client side every route shares: kept-alive
// HTTP/1.1 connections, enough of them idle per service for the concurrency
// of a load test, and every connection's reads and writes bounded so that a
// stalled service frees the request within timeout.
func newTransport(timeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &stallConn{Conn: c, timeout: timeout}, nil
		},
		MaxIdleConns:        0, // no limit across services
		MaxIdleConnsPerHost: 1024,
		// Retire idle connections well before a service's own idle timeout
		// (two minutes) could close them under a request.
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: timeout,
		// The client's Accept-Encoding goes through as it is, and so does
		// the service's answer.
		DisableCompression: true,
		ReadBufferSize:     16 << 10,
		WriteBufferSize:    16 << 10,
		// A service that neither answers nor asks for the body of an
		// `Expect: 100-continue` request within this gets it anyway.
		ExpectContinueTimeout: time.Second,
	}
}

// expectContinueAbove is the body size from which a request asks the
// service before sending the body (bodies of unknown length ask too).
const expectContinueAbove = 64 << 10

// newProxy returns the reverse proxy for one service at addr.
func (in *Ingress) newProxy(service, addr string) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = addr
			// The Host header stays the client's, as the services build
			// links from their public URL and not from it.
			// X-Forwarded-For lists the hops before this one too.
			if xff := pr.In.Header["X-Forwarded-For"]; len(xff) > 0 {
				pr.Out.Header["X-Forwarded-For"] = xff
			}
			pr.SetXForwarded()
			if id := pr.In.Header[reqid.Header]; len(id) == 0 || !reqid.Valid(id[0]) {
				pr.Out.Header[reqid.Header] = []string{in.reqIDs.Next()}
			}
			// A large body waits for the service's go-ahead: a service
			// that refuses it (413, 401...) answers before any of it is
			// sent, instead of resetting the connection under a body it
			// will never read, which would turn its answer into a 502.
			if pr.Out.ContentLength > expectContinueAbove || pr.Out.ContentLength < 0 {
				pr.Out.Header.Set("Expect", "100-continue")
			}
		},
		Transport:      in.roundTripper,
		BufferPool:     bufferPool{},
		ModifyResponse: stripCORS,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if sw, ok := w.(*stallWriter); ok && sw.body != nil && sw.body.failed.Load() {
				// The client went away or stalled mid-body: drop its
				// connection rather than answer a request it never sent
				// in full.
				panic(http.ErrAbortHandler)
			}
			jsonresp.Error(w, http.StatusBadGateway, "bad_gateway", fmt.Sprintf("the %s service failed to answer: %v", service, err))
		},
	}
}

// serveProxy forwards r to p, bounding every read of the request body and
// every write of the answer by the response timeout.
func (in *Ingress) serveProxy(w http.ResponseWriter, r *http.Request, p *httputil.ReverseProxy) {
	rc := http.NewResponseController(w)
	sw := &stallWriter{ResponseWriter: w, rc: rc, timeout: in.opts.ResponseTimeout}
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		sw.body = &clientBody{ReadCloser: r.Body, rc: rc, timeout: in.opts.ResponseTimeout}
		r.Body = sw.body
	}
	p.ServeHTTP(sw, r)
	if sw.deadline != (time.Time{}) {
		// The next request on this connection starts without one.
		_ = rc.SetWriteDeadline(time.Time{})
	}
}

// stripCORS drops CORS headers: the API is server-to-server only, and no
// CORS header ever leaves the ingress.
func stripCORS(res *http.Response) error {
	for k := range res.Header {
		if len(k) > 15 && strings.EqualFold(k[:15], "Access-Control-") {
			delete(res.Header, k)
		}
	}
	return nil
}

// clientBody bounds each read of a request body by timeout, so that a
// client that stops sending frees the request, and remembers a failed read
// so that the error is not blamed on the service.
type clientBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	failed  atomic.Bool
}

func (b *clientBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		// Clear the deadline: the server's check for a closed connection
		// reads on while the answer is written.
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		b.failed.Store(true)
	}
	return n, err
}

// stallWriter bounds each write of the answer by timeout, moving the
// connection's write deadline at most once per half timeout.
type stallWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	timeout  time.Duration
	deadline time.Time
	// body is the request body, when there is one.
	body *clientBody
}

func (w *stallWriter) Write(p []byte) (int, error) {
	if now := time.Now(); w.deadline.Sub(now) < w.timeout/2 {
		w.deadline = now.Add(w.timeout)
		_ = w.rc.SetWriteDeadline(w.deadline)
	}
	return w.ResponseWriter.Write(p)
}

func (w *stallWriter) Flush() { _ = w.rc.Flush() }

// Unwrap lets http.ResponseController reach the server's writer.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// stallConn is a connection to a service whose reads and writes may each
// stall for at most timeout. Deadlines are moved at most once per half
// timeout: moving one costs a runtime timer update.
type stallConn struct {
	net.Conn
	timeout       time.Duration
	readDeadline  atomic.Int64
	writeDeadline atomic.Int64
}

func (c *stallConn) Read(p []byte) (int, error) {
	if now := time.Now().UnixNano(); c.readDeadline.Load()-now < int64(c.timeout/2) {
		d := now + int64(c.timeout)
		c.readDeadline.Store(d)
		_ = c.Conn.SetReadDeadline(time.Unix(0, d))
	}
	return c.Conn.Read(p)
}

func (c *stallConn) Write(p []byte) (int, error) {
	if now := time.Now().UnixNano(); c.writeDeadline.Load()-now < int64(c.timeout/2) {
		d := now + int64(c.timeout)
		c.writeDeadline.Store(d)
		_ = c.Conn.SetWriteDeadline(time.Unix(0, d))
	}
	return c.Conn.Write(p)
}

// bufferPool lends the proxy the buffers bodies are copied through.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }
