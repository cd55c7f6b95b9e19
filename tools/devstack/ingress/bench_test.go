package ingress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"quarters.dev/pkg/routes"
)

// BenchmarkProxy measures a small GET through the ingress over kept-alive
// connections on both sides, client and service in the same process.
func BenchmarkProxy(b *testing.B) {
	body := []byte(`{"listings":[{"id":"l_1","nickname":"Canal loft"}]}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer up.Close()
	table, err := routes.Default(true)
	if err != nil {
		b.Fatal(err)
	}
	in := New(table, Options{})
	defer in.Close()
	in.SetUpstream("catalog", up.Listener.Addr().String())
	front := httptest.NewServer(in)
	defer front.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	url := front.URL + "/api/v1/listings"
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
}

// BenchmarkRoute measures finding a request's target: one walk of the
// routing trie and one map lookup, without allocating.
func BenchmarkRoute(b *testing.B) {
	table, err := routes.Default(true)
	if err != nil {
		b.Fatal(err)
	}
	in := New(table, Options{})
	b.ReportAllocs()
	for b.Loop() {
		route, _ := in.table.Match("/api/v1/listings/l_123/calendar")
		if in.targets[route.Service] == nil {
			b.Fatal("no target")
		}
	}
}
