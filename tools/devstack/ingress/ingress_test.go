package ingress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"quarters.dev/pkg/reqid"
	"quarters.dev/pkg/routes"
)

// echo is an upstream that reports what it received.
func echo(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		json.NewEncoder(w).Encode(map[string]any{
			"service": name, "method": r.Method, "uri": r.RequestURI, "host": r.Host,
			"xff": r.Header.Get("X-Forwarded-For"), "proto": r.Header.Get("X-Forwarded-Proto"),
			"requestId": r.Header.Get("X-Request-Id"), "custom": r.Header.Get("X-Custom"),
			"connection": r.Header.Get("X-Hop"), "bytes": n, "sha": hex.EncodeToString(h.Sum(nil)),
		})
	})
}

type fixture struct {
	url string
	in  *Ingress
}

func newFixture(t *testing.T, opts Options, upstreams map[string]http.Handler) *fixture {
	t.Helper()
	table, err := routes.Default(true)
	if err != nil {
		t.Fatal(err)
	}
	in := New(table, opts)
	for name, h := range upstreams {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		in.SetUpstream(name, s.Listener.Addr().String())
	}
	front := httptest.NewServer(in)
	t.Cleanup(front.Close)
	t.Cleanup(in.Close)
	return &fixture{url: front.URL, in: in}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func do(t *testing.T, req *http.Request) answer {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: res.StatusCode, header: res.Header}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			t.Fatalf("body %q is not JSON: %v", raw, err)
		}
	}
	return a
}

func get(t *testing.T, url string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	return do(t, req)
}

func TestRoutesToOwningService(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, map[string]http.Handler{
		"auth": echo("auth"), "catalog": echo("catalog"), "availability": echo("availability"),
	})
	tests := []struct{ path, service string }{
		{"/api/v1/oauth2/token", "auth"},
		{"/api/v1/listings", "catalog"},
		{"/api/v1/listings/abc?x=1&y=%20", "catalog"},
		{"/api/v1/listings/abc/calendar?start=2026-01-01", "availability"},
		{"/api/v1/no-such-thing", "auth"},
		{"/api/v1", "auth"},
		{"/admin/v1/orgs", "auth"},
		{"/admin/v1/orgs/o1/properties/p1", "catalog"},
		{"/admin/v1/orgs/o1/properties/p1/blocks", "availability"},
	}
	for _, tt := range tests {
		a := get(t, f.url+tt.path)
		if a.status != 200 || a.body["service"] != tt.service {
			t.Errorf("GET %s: %d %v, want service %s", tt.path, a.status, a.body, tt.service)
			continue
		}
		if a.body["uri"] != tt.path {
			t.Errorf("GET %s: upstream saw %v", tt.path, a.body["uri"])
		}
	}
}

func TestForwardsHostHeadersAndRequestID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, map[string]http.Handler{"catalog": echo("catalog")})

	req, _ := http.NewRequest(http.MethodGet, f.url+"/api/v1/listings", nil)
	req.Host = "api.example.test"
	req.Header.Set("X-Custom", "kept")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "dropped")
	req.Header.Set("X-Request-Id", "req-123")
	a := do(t, req)
	if a.body["host"] != "api.example.test" || a.body["custom"] != "kept" || a.body["proto"] != "http" {
		t.Fatalf("upstream saw %v", a.body)
	}
	if a.body["xff"] != "203.0.113.9, 127.0.0.1" {
		t.Fatalf("X-Forwarded-For = %v", a.body["xff"])
	}
	if a.body["connection"] != "" {
		t.Fatalf("header named in Connection was forwarded: %v", a.body["connection"])
	}
	if a.body["requestId"] != "req-123" {
		t.Fatalf("request id = %v, want the client's", a.body["requestId"])
	}

	first := get(t, f.url+"/api/v1/listings").body["requestId"].(string)
	second := get(t, f.url+"/api/v1/listings").body["requestId"].(string)
	if len(first) != reqid.Len || first == second {
		t.Fatalf("generated request ids %q and %q", first, second)
	}
}

func TestNotRunningServiceAnswers503(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, map[string]http.Handler{"auth": echo("auth")})
	a := get(t, f.url+"/api/v1/listings")
	if a.status != 503 || a.body["error"] != "service_unavailable" || a.body["message"] != "the catalog service is not running" {
		t.Fatalf("got %d %v", a.status, a.body)
	}
	checkOwnHeaders(t, a)

	f.in.SetUpstream("auth", "")
	if a := get(t, f.url+"/api/v1/oauth2/token"); a.status != 503 || a.body["message"] != "the auth service is not running" {
		t.Fatalf("after SetUpstream(auth, \"\"): %d %v", a.status, a.body)
	}
}

func TestConnectionFailureAnswers502(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f.in.SetUpstream("catalog", addr)
	a := get(t, f.url+"/api/v1/listings")
	if a.status != 502 || a.body["error"] != "bad_gateway" || !strings.Contains(a.body["message"].(string), "catalog") {
		t.Fatalf("got %d %v", a.status, a.body)
	}
	checkOwnHeaders(t, a)

	// A service that drops the connection mid-request.
	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Close()
	}))
	defer hangup.Close()
	f.in.SetUpstream("catalog", hangup.Listener.Addr().String())
	if a := get(t, f.url+"/api/v1/listings"); a.status != 502 || a.body["error"] != "bad_gateway" {
		t.Fatalf("hang-up: %d %v", a.status, a.body)
	}
}

func checkOwnHeaders(t *testing.T, a answer) {
	t.Helper()
	if a.header.Get("Cache-Control") != "no-store" || a.header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v, want no-store and JSON", a.header)
	}
	for k := range a.header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("CORS header %s on an ingress answer", k)
		}
	}
}

func TestUnknownTopLevelPathsAnswer404JSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, map[string]http.Handler{"auth": echo("auth")})
	for _, p := range []string{"/", "/favicon.ico", "/api", "/api/v2/listings", "/api/v1x", "/admin", "/readyz/x", "/api/v1/listings/../../../etc"} {
		a := get(t, f.url+p)
		if a.status != 404 || a.body["error"] != "not_found" || a.body["message"] == "" {
			t.Errorf("GET %s: %d %v", p, a.status, a.body)
		}
		checkOwnHeaders(t, a)
	}
}

func TestNoCORSOnPreflight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, map[string]http.Handler{"catalog": echo("catalog")})
	for _, p := range []string{"/api/v1/listings", "/healthz", "/nowhere"} {
		req, _ := http.NewRequest(http.MethodOptions, f.url+p, nil)
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Access-Control-Request-Method", "GET")
		a := do(t, req)
		for k := range a.header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("OPTIONS %s: CORS header %s", p, k)
			}
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	var ready atomic.Bool
	f := newFixture(t, Options{Ready: func(context.Context) (bool, map[string]string) {
		state := "starting"
		if ready.Load() {
			state = "ready"
		}
		return ready.Load(), map[string]string{"auth": "ready", "catalog": state}
	}}, nil)

	if a := get(t, f.url+"/healthz"); a.status != 200 {
		t.Fatalf("healthz %d", a.status)
	}
	a := get(t, f.url+"/readyz")
	if a.status != 503 || a.body["status"] != "not_ready" || a.body["services"].(map[string]any)["catalog"] != "starting" {
		t.Fatalf("readyz while starting: %d %v", a.status, a.body)
	}
	checkOwnHeaders(t, a)
	ready.Store(true)
	a = get(t, f.url+"/readyz")
	if a.status != 200 || a.body["status"] != "ready" || a.body["services"].(map[string]any)["catalog"] != "ready" {
		t.Fatalf("readyz when ready: %d %v", a.status, a.body)
	}
}

func TestStreamsLargeBodies(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("%PDF-1.7 quarters "), 26<<20/18)
	sum := sha256.Sum256(big)
	want := hex.EncodeToString(sum[:])
	f := newFixture(t, Options{}, map[string]http.Handler{
		"agreements": echo("agreements"),
		"availability": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Header().Set("Content-Type", "application/pdf")
			w.Write(big)
		}),
		"catalog": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// No Content-Length: net/http answers chunked.
			for i := 0; i < len(big); i += 1 << 20 {
				w.Write(big[i:min(i+1<<20, len(big))])
			}
		}),
	})
	url := f.url + "/api/v1/reservations/r1/agreement/document"

	// With a length.
	req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(big))
	if a := do(t, req); a.status != 200 || a.body["sha"] != want || a.body["bytes"] != float64(len(big)) {
		t.Fatalf("PUT with length: %d %v", a.status, a.body)
	}
	// Chunked, as a client streaming a file of unknown size sends it.
	req, _ = http.NewRequest(http.MethodPut, url, io.MultiReader(bytes.NewReader(big)))
	req.ContentLength = -1
	if a := do(t, req); a.status != 200 || a.body["sha"] != want {
		t.Fatalf("PUT chunked: %d %v", a.status, a.body)
	}
	// A large response with a length.
	res, err := http.Get(f.url + "/api/v1/listings/l1/calendar")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || !bytes.Equal(got, big) || res.ContentLength != int64(len(big)) {
		t.Fatalf("response with length: %d bytes (announced %d), err %v", len(got), res.ContentLength, err)
	}
	// A large chunked response.
	res, err = http.Get(f.url + "/api/v1/listings")
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("chunked response: %d bytes, err %v", len(got), err)
	}
}

// A service that refuses a large body without reading it (and closes the
// connection, as the services do) must reach the client as its own answer:
// the ingress asks before sending a large body (Expect: 100-continue), so
// it never writes into a connection the service is resetting.
func TestRelaysEarlyAnswerToUnreadBody(t *testing.T) {
	t.Parallel()
	var expects sync.Map
	f := newFixture(t, Options{}, map[string]http.Handler{
		"agreements": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			expects.Store(r.Header.Get("Expect"), true)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			io.WriteString(w, `{"error":"payload_too_large","message":"document over 25 MB"}`)
		}),
	})
	body := bytes.Repeat([]byte("x"), 30<<20)
	for i := range 5 {
		req, _ := http.NewRequest(http.MethodPut, f.url+"/api/v1/reservations/r1/agreement/document", bytes.NewReader(body))
		a := do(t, req)
		if a.status != 413 || a.body["error"] != "payload_too_large" {
			t.Fatalf("attempt %d: got %d %v", i, a.status, a.body)
		}
	}
	if _, ok := expects.Load("100-continue"); !ok {
		t.Fatal("the large body was sent without asking the service first")
	}
}

// A service may close a kept-alive connection just as the ingress sends a
// request on it. The upstream here answers the first request of every
// connection and hangs up on the second without a word: a request that can
// be sent again is, on a second connection; one that cannot answers 502.
func TestRetriesIdleConnectionTheServiceClosed(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var dialled, hungUp atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				body := `{"service":"catalog","uri":"` + req.RequestURI + `"}`
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				if _, err := http.ReadRequest(br); err == nil {
					hungUp.Add(1)
				}
			}()
		}
	}()
	f := newFixture(t, Options{}, nil)
	f.in.SetUpstream("catalog", l.Addr().String())

	if a := get(t, f.url+"/api/v1/listings?n=1"); a.status != 200 {
		t.Fatalf("first: %d", a.status)
	}
	a := get(t, f.url+"/api/v1/listings?n=2")
	if a.status != 200 || a.body["uri"] != "/api/v1/listings?n=2" {
		t.Fatalf("GET on a connection the service closed: %d %v", a.status, a.body)
	}
	if hungUp.Load() != 1 || dialled.Load() != 2 {
		t.Fatalf("the service hung up %d times and saw %d connections; want the retry on a second connection", hungUp.Load(), dialled.Load())
	}

	// A POST is not sent twice: the hang-up answers 502.
	req, _ := http.NewRequest(http.MethodPost, f.url+"/api/v1/listings?n=3", strings.NewReader(`{}`))
	if a := do(t, req); a.status != 502 || a.body["error"] != "bad_gateway" {
		t.Fatalf("POST on a connection the service closed: %d %v", a.status, a.body)
	}
	if hungUp.Load() != 2 || dialled.Load() != 2 {
		t.Fatalf("after the POST: %d hang-ups, %d connections; want it sent once", hungUp.Load(), dialled.Load())
	}
}

func TestHeadAndNoContent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, map[string]http.Handler{
		"auth": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Content-Length", "11")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}),
	})
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodHead, f.url+"/admin/v1/orgs", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Length") != "11" {
			t.Fatalf("HEAD %d: %d %v", i, res.StatusCode, res.Header)
		}
		req, _ = http.NewRequest(http.MethodDelete, f.url+"/admin/v1/orgs/o1/credentials/c1", nil)
		if a := do(t, req); a.status != 204 {
			t.Fatalf("DELETE %d: %d", i, a.status)
		}
	}
}

func TestConcurrentRequestsShareConnections(t *testing.T) {
	t.Parallel()
	up := httptest.NewUnstartedServer(echo("catalog"))
	var conns atomic.Int32
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	f := newFixture(t, Options{}, nil)
	f.in.SetUpstream("catalog", up.Listener.Addr().String())
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			for j := range 25 {
				res, err := http.Post(f.url+"/api/v1/listings?i="+strconv.Itoa(i), "text/plain", strings.NewReader(fmt.Sprint(i, j)))
				if err != nil {
					errs <- err
					return
				}
				var body map[string]any
				json.NewDecoder(res.Body).Decode(&body)
				res.Body.Close()
				if body["uri"] != "/api/v1/listings?i="+strconv.Itoa(i) {
					errs <- fmt.Errorf("request %d/%d answered for %v", i, j, body["uri"])
					return
				}
			}
			errs <- nil
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// 500 requests, at most 20 at a time: kept-alive connections carry
	// them (a few more than 20 may open while a finished exchange hands its
	// connection back).
	if n := conns.Load(); n > 40 {
		t.Fatalf("the service saw %d connections for 500 requests, 20 at a time", n)
	}
}

func TestStalledClientOrServiceDoesNotHang(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ResponseTimeout: 300 * time.Millisecond}, map[string]http.Handler{
		"agreements": echo("agreements"),
		"catalog": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * time.Second)
		}),
	})

	// A client that announces 1000 bytes, sends 10 and goes quiet has its
	// connection closed, with no answer.
	c, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "PUT /api/v1/reservations/r1/agreement/document HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	got, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a stalled request body held its connection open for 3s")
	}
	if len(got) != 0 {
		t.Fatalf("stalled client got an answer: %q", got)
	}

	// A service that does not answer in time.
	start := time.Now()
	a := get(t, f.url+"/api/v1/listings")
	if a.status != 502 || a.body["error"] != "bad_gateway" || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("slow service: %d %v after %s", a.status, a.body, time.Since(start))
	}
}
