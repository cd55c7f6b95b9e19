package coalesce_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"quarters.dev/pkg/coalesce"
)

// BenchmarkResponse serves a 4 462-byte answer (one published listing's
// size) over loopback from a plain net/http server and from one on a
// coalescing listener, to parallel keep-alive clients that write a raw
// request and read the raw answer, so that the figure is mostly the
// server's: ns/op is the CPU of server and clients per request.
func BenchmarkResponse(b *testing.B) {
	want := body(4462)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(want)
	})
	req := []byte("GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
	for _, bc := range []struct {
		name      string
		coalesced bool
	}{{"net-http", false}, {"coalesced", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewUnstartedServer(h)
			srv.Listener.Close()
			srv.Listener = ln
			if bc.coalesced {
				srv.Listener = coalesce.Listen(ln)
			}
			srv.Start()
			defer srv.Close()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				r := bufio.NewReaderSize(c, 16<<10)
				for pb.Next() {
					if _, err := c.Write(req); err != nil {
						b.Error(err)
						return
					}
					res, err := http.ReadResponse(r, nil)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
				}
			})
		})
	}
}
