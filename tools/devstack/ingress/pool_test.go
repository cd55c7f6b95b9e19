package ingress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A connection idle for longer than the pool keeps it is not lent again:
// a service that closed it in the meantime would otherwise fail a request
// that cannot be sent twice.
func TestPoolRetiresIdleConnections(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	srv.Config.IdleTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	dialer := &net.Dialer{}
	pool := newPoolTransport(dialer.DialContext, http.DefaultTransport)
	pool.idleTimeout = 100 * time.Millisecond
	t.Cleanup(pool.CloseIdleConnections)

	post := func() (int, error) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orgs", strings.NewReader(`{"name":"x"}`))
		res, err := pool.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		io.Copy(io.Discard, res.Body)
		return res.StatusCode, nil
	}
	for i := range 3 {
		if code, err := post(); err != nil || code != 200 {
			t.Fatalf("POST %d: %d %v", i, code, err)
		}
		time.Sleep(500 * time.Millisecond) // the server closes the idle connection
	}
}
