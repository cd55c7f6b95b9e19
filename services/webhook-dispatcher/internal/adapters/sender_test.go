package adapters

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

const testSecret = "whsec_test-secret"

// receiver is a real HTTPS receiver that checks every request as an
// integrator's receiver would: signature over the raw body, headers, JSON.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	prefix string
	mu     sync.Mutex
	got    []received
	status int
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, prefix string) *receiver {
	r := &receiver{t: t, prefix: prefix, status: http.StatusOK}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), raw})
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(r.srv.Certificate())
	return p
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func delivery(t *testing.T, name string, data any) domain.Delivery {
	t.Helper()
	ev := domain.Event{SourceID: "evt-1", OrgID: "org_1", Name: name, OccurredAt: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), Data: data}
	id := domain.DeliveryID(ev.SourceID, "wh_1")
	body, err := ev.Body(id)
	if err != nil {
		t.Fatal(err)
	}
	return domain.Delivery{RecordID: id, DeliveryID: id, EndpointID: "wh_1", OrgID: "org_1", Event: name, Body: body, CreatedAt: ev.OccurredAt}
}

func TestSignedDeliveryToAnHTTPSReceiver(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"legacy", "quarters"} {
		r := newReceiver(t, prefix)
		s := NewSender(SenderConfig{HeaderPrefix: prefix, AllowPrivate: true, RootCAs: r.pool()})
		d := delivery(t, domain.ReservationUpdated, domain.ReservationUpdatedData{ReservationID: "r1", PropertyID: "p1", Status: "cancelled", PreviousStatus: "reserved"})
		out := s.Send(context.Background(), domain.Endpoint{ID: "wh_1", URL: r.srv.URL + "/hooks?x=1", Secret: testSecret}, d)
		if !out.Delivered || out.StatusCode != 200 || out.Reason != "" {
			t.Fatalf("%s: outcome %+v", prefix, out)
		}
		reqs := r.requests()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests", prefix, len(reqs))
		}
		got := reqs[0]
		if !domain.VerifySignature(testSecret, got.body, got.header.Get("x-"+prefix+"-signature")) {
			t.Errorf("%s: signature %q does not verify over the raw body", prefix, got.header.Get("x-"+prefix+"-signature"))
		}
		if sig := got.header.Get("x-" + prefix + "-signature"); sig != strings.ToLower(sig) || !strings.HasPrefix(sig, "sha256=") || len(sig) != 7+64 {
			t.Errorf("%s: signature format %q", prefix, sig)
		}
		if got.header.Get("x-"+prefix+"-event") != domain.ReservationUpdated || got.header.Get("x-"+prefix+"-delivery") != d.DeliveryID ||
			got.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: headers %v", prefix, got.header)
		}
		if got.header.Get("Accept-Encoding") != "" {
			t.Errorf("%s: asks for compression: %q", prefix, got.header.Get("Accept-Encoding"))
		}
		var body map[string]any
		if err := json.Unmarshal(got.body, &body); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"id": d.DeliveryID, "event": "reservation.updated", "createdAt": "2026-05-01T10:00:00.000Z",
			"data": map[string]any{"reservationId": "r1", "propertyId": "p1", "status": "cancelled", "previousStatus": "reserved"}}
		if fmt.Sprint(body) != fmt.Sprint(want) {
			t.Errorf("%s: body %s", prefix, got.body)
		}
		if !strings.HasPrefix(string(got.body), `{"id":`) {
			t.Errorf("%s: body field order %s", prefix, got.body)
		}
	}
}

func TestAny2xxCountsAndOthersFail(t *testing.T) {
	t.Parallel()
	for _, code := range []int{200, 201, 202, 204, 299, 300, 304, 400, 404, 410, 500, 503} {
		r := newReceiver(t, "legacy")
		r.status = code
		s := NewSender(SenderConfig{AllowPrivate: true, RootCAs: r.pool()})
		out := s.Send(context.Background(), domain.Endpoint{URL: r.srv.URL, Secret: testSecret}, delivery(t, domain.Ping, domain.PingData{WebhookID: "wh_1"}))
		ok := code >= 200 && code <= 299
		if out.Delivered != ok || out.StatusCode != code {
			t.Errorf("%d: outcome %+v", code, out)
		}
		if !ok && (out.Reason != domain.ReasonNon2xx || out.Error != fmt.Sprintf("non-2xx: %d", code)) {
			t.Errorf("%d: reason %q error %q", code, out.Reason, out.Error)
		}
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hook/{code}", func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscan(r.PathValue("code"), &code)
		http.Redirect(w, r, "/elsewhere", code)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	s := NewSender(SenderConfig{AllowPrivate: true, RootCAs: pool})
	for _, code := range []int{301, 302, 303, 307, 308} {
		out := s.Send(context.Background(), domain.Endpoint{URL: fmt.Sprintf("%s/hook/%d", srv.URL, code), Secret: testSecret}, delivery(t, domain.Ping, nil))
		if out.Delivered || out.StatusCode != code || out.Reason != domain.ReasonNon2xx {
			t.Fatalf("redirect %d: outcome %+v", code, out)
		}
	}
	if n := followed.Load(); n != 0 {
		t.Fatalf("redirect target reached %d times", n)
	}
}

func TestSlowReceiverTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	s := NewSender(SenderConfig{AllowPrivate: true, RootCAs: pool, Timeout: 300 * time.Millisecond})
	out := s.Send(context.Background(), domain.Endpoint{URL: srv.URL, Secret: testSecret}, delivery(t, domain.Ping, nil))
	if out.Delivered || out.Reason != domain.ReasonTimeout || out.Error != "timeout" {
		t.Fatalf("outcome %+v", out)
	}
	if out.Duration < 300*time.Millisecond || out.Duration > 5*time.Second {
		t.Fatalf("duration %v, want about the timeout", out.Duration)
	}
}

func TestSlowBodyCountsAgainstTheTotalTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select { // headers came at once; the body never ends
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	s := NewSender(SenderConfig{AllowPrivate: true, RootCAs: pool, Timeout: 300 * time.Millisecond})
	out := s.Send(context.Background(), domain.Endpoint{URL: srv.URL, Secret: testSecret}, delivery(t, domain.Ping, nil))
	if out.Delivered || out.Reason != domain.ReasonTimeout {
		t.Fatalf("outcome %+v", out)
	}
}

func TestResponseBodyReadIsCapped(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(200)
		chunk := make([]byte, 32<<10)
		for range 64 << 10 { // up to 2 GB, far more than any buffer
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	s := NewSender(SenderConfig{AllowPrivate: true, RootCAs: pool})
	out := s.Send(context.Background(), domain.Endpoint{URL: srv.URL, Secret: testSecret}, delivery(t, domain.Ping, nil))
	if !out.Delivered {
		t.Fatalf("outcome %+v", out)
	}
	s.CloseIdle()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the receiver kept writing: the connection was not closed")
	}
	if n := written.Load(); n > 64<<20 {
		t.Fatalf("receiver wrote %d bytes before the dispatcher hung up", n)
	}
}

func TestUntrustedCertificateIsATLSError(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, "legacy")
	s := NewSender(SenderConfig{AllowPrivate: true}) // the system roots do not know the test CA
	out := s.Send(context.Background(), domain.Endpoint{URL: r.srv.URL, Secret: testSecret}, delivery(t, domain.Ping, nil))
	if out.Delivered || out.Reason != domain.ReasonTLSError || !strings.HasPrefix(out.Error, "TLS error") {
		t.Fatalf("outcome %+v", out)
	}
	if len(r.requests()) != 0 {
		t.Fatal("request reached the receiver")
	}
}

func TestPlainHTTPIsRefusedUnlessAllowed(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	out := NewSender(SenderConfig{AllowPrivate: true}).Send(context.Background(), domain.Endpoint{URL: srv.URL, Secret: testSecret}, delivery(t, domain.Ping, nil))
	if out.Delivered || out.Reason != domain.ReasonInvalidURL || hits.Load() != 0 {
		t.Fatalf("http without AllowHTTP: %+v, %d hits", out, hits.Load())
	}
	out = NewSender(SenderConfig{AllowPrivate: true, AllowHTTP: true}).Send(context.Background(), domain.Endpoint{URL: srv.URL, Secret: testSecret}, delivery(t, domain.Ping, nil))
	if !out.Delivered || hits.Load() != 1 {
		t.Fatalf("http with AllowHTTP: %+v, %d hits", out, hits.Load())
	}
}

// stubResolver maps names to addresses, as a DNS server under an
// attacker's control would.
type stubResolver struct {
	names   map[string]string
	lookups atomic.Int32
}

func (s *stubResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	s.lookups.Add(1)
	a, ok := s.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

func TestNamesResolvingToRefusedAddressesAreRefusedWhenDialling(t *testing.T) {
	t.Parallel()
	res := &stubResolver{names: map[string]string{}}
	for i, a := range refusedAddrs {
		res.names[fmt.Sprintf("host%d.example.test", i)] = a
	}
	s := NewSender(SenderConfig{Resolver: res, Timeout: 5 * time.Second})
	for i, a := range refusedAddrs {
		out := s.Send(context.Background(), domain.Endpoint{URL: fmt.Sprintf("https://host%d.example.test/hook", i), Secret: testSecret}, delivery(t, domain.Ping, nil))
		if out.Delivered || out.Reason != domain.ReasonRefusedAddress || !strings.Contains(out.Error, "refused address") {
			t.Errorf("%s: outcome %+v", a, out)
		}
	}
	if int(res.lookups.Load()) != len(refusedAddrs) {
		t.Errorf("%d lookups for %d names", res.lookups.Load(), len(refusedAddrs))
	}
}

func TestIPSpellingsCannotReachLoopback(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	// A resolver that, like the C library's, reads numeric spellings as
	// addresses: the dial-time check still refuses them.
	res := &stubResolver{names: map[string]string{"2130706433": "127.0.0.1", "0x7f.1": "127.0.0.1", "0177.0.0.1": "127.0.0.1", "127.1": "127.0.0.1", "017700000001": "127.0.0.1", "0x7f000001": "127.0.0.1"}}
	for _, resolver := range []Resolver{res, nil} {
		s := NewSender(SenderConfig{Resolver: resolver, RootCAs: pool, Timeout: 3 * time.Second})
		for _, host := range []string{"127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.1", "017700000001", "0x7f000001", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::1]", "localhost"} {
			out := s.Send(context.Background(), domain.Endpoint{URL: "https://" + host + ":" + port + "/", Secret: testSecret}, delivery(t, domain.Ping, nil))
			if out.Delivered {
				t.Errorf("%s delivered", host)
			}
			if out.Reason != domain.ReasonRefusedAddress && out.Reason != domain.ReasonConnectionError && out.Reason != domain.ReasonInvalidURL {
				t.Errorf("%s: outcome %+v", host, out)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("loopback receiver reached %d times", n)
	}
}

// TestProxyVariablesAreIgnored is not parallel: it sets the environment.
func TestProxyVariablesAreIgnored(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxied.Add(1) }))
	defer proxy.Close()
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	r := newReceiver(t, "legacy")
	s := NewSender(SenderConfig{AllowPrivate: true, RootCAs: r.pool()})
	out := s.Send(context.Background(), domain.Endpoint{URL: r.srv.URL, Secret: testSecret}, delivery(t, domain.Ping, nil))
	if !out.Delivered || len(r.requests()) != 1 || proxied.Load() != 0 {
		t.Fatalf("outcome %+v, %d direct, %d through the proxy", out, len(r.requests()), proxied.Load())
	}
}
