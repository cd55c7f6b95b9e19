package coalesce_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"quarters.dev/pkg/coalesce"
)

// writes records the write calls that reach the network.
type writes struct {
	mu    sync.Mutex
	sizes []int
}

func (w *writes) add(n int) {
	w.mu.Lock()
	w.sizes = append(w.sizes, n)
	w.mu.Unlock()
}

func (w *writes) take() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.sizes
	w.sizes = nil
	return s
}

type countingListener struct {
	net.Listener
	w *writes
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.w}, nil
}

type countingConn struct {
	net.Conn
	w *writes
}

func (c countingConn) Write(p []byte) (int, error) {
	c.w.add(len(p))
	return c.Conn.Write(p)
}

// start serves h on loopback, counting the writes that reach the socket;
// coalesced wraps the listener with coalesce.Listen.
func start(t *testing.T, h http.Handler, coalesced bool) (*httptest.Server, *writes) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &writes{}
	var l net.Listener = countingListener{ln, w}
	if coalesced {
		l = coalesce.Listen(l)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Config.WriteTimeout = time.Minute
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, w
}

func body(n int) []byte {
	b := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)
	return b[:n]
}

func get(t *testing.T, c *http.Client, url string) []byte {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	return b
}

func TestOneWritePerResponse(t *testing.T) {
	for _, size := range []int{10, 4462, 20000, coalesce.MaxHeld - 300} {
		want := body(size)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(want)
		})
		plain, plainWrites := start(t, h, false)
		srv, w := start(t, h, true)
		c := &http.Client{Transport: &http.Transport{}}
		for i := range 3 {
			if got := get(t, c, srv.URL); !bytes.Equal(got, want) {
				t.Fatalf("%d bytes, request %d: body differs", size, i)
			}
			if got := w.take(); len(got) != 1 {
				t.Errorf("%d bytes, request %d: %d writes %v, want 1", size, i, len(got), got)
			}
		}
		// What net/http does alone, for the record.
		if size > 4096 {
			get(t, c, plain.URL)
			if got := plainWrites.take(); len(got) < 2 {
				t.Errorf("%d bytes without coalescing: %d writes, expected net/http to split it", size, len(got))
			}
		}
	}
}

func TestLargeResponsesLeaveInBoundedWrites(t *testing.T) {
	const size = 1 << 20
	want := body(size)
	srv, w := start(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// Many small writes, as an encoder makes.
		for p := want; len(p) > 0; p = p[min(100, len(p)):] {
			_, _ = rw.Write(p[:min(100, len(p))])
		}
	}), true)
	got := get(t, http.DefaultClient, srv.URL)
	if !bytes.Equal(got, want) {
		t.Fatal("body differs")
	}
	sizes := w.take()
	total := 0
	for _, n := range sizes {
		if n > coalesce.MaxHeld {
			t.Errorf("a write of %d bytes, more than MaxHeld", n)
		}
		total += n
	}
	if limit := size/(coalesce.MaxHeld-4096) + 2; len(sizes) > limit {
		t.Errorf("%d writes for %d bytes, want at most %d", len(sizes), total, limit)
	}
}

func TestBodyOverMaxHeldInOneCall(t *testing.T) {
	want := body(3 * coalesce.MaxHeld)
	srv, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(want)
	}), true)
	if got := get(t, http.DefaultClient, srv.URL); !bytes.Equal(got, want) {
		t.Fatal("body differs")
	}
}

// dial opens a raw connection to srv whose reads give up after 5 s: a
// response held back makes the read fail instead of hanging the test.
func dial(t *testing.T, srv *httptest.Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

// exchange sends a raw request on a new connection and reads the response
// head; the reader holds what follows.
func exchange(t *testing.T, srv *httptest.Server, request string) (*http.Response, *bufio.Reader) {
	t.Helper()
	c, r := dial(t, srv)
	_, _ = io.WriteString(c, request)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, r
}

func TestContinueIsSentBeforeTheBodyIsRead(t *testing.T) {
	srv, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(bytes.ToUpper(b))
	}), true)
	c, r := dial(t, srv)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("waiting for 100 Continue: %q, %v", line, err)
	}
	if _, err := r.ReadString('\n'); err != nil { // the blank line
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "hello")
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(res.Body); string(b) != "HELLO" {
		t.Fatalf("body %q", b)
	}
}

func TestConnectionCloseDeliversTheWholeResponse(t *testing.T) {
	want := body(10000)
	srv, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(want)
	}), true)
	res, r := exchange(t, srv, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if b, err := io.ReadAll(res.Body); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("body of %d bytes, %v", len(b), err)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("after the response: %v, want EOF", err)
	}
}

func TestStreamingHandlerSendsOnWriteDeadline(t *testing.T) {
	release := make(chan struct{})
	srv, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_, _ = io.WriteString(w, "first\n")
		_ = rc.Flush()
		_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		<-release
		_, _ = io.WriteString(w, "second\n")
	}), true)
	defer close(release)
	res, _ := exchange(t, srv, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first part: %q, %v", line, err)
	}
}

func TestHijackedConnectionWritesThrough(t *testing.T) {
	release := make(chan struct{})
	srv, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
		_ = buf.Flush()
		<-release
	}), true)
	defer close(release)
	res, _ := exchange(t, srv, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, err := io.ReadAll(res.Body); err != nil || string(b) != "hello" {
		t.Fatalf("body %q, %v", b, err)
	}
}
