package authn

import (
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/httpx"
)

// BenchmarkMiddlewareBearer measures one authenticated request through the
// middleware against the Redis of testRedis (the local one when it answers).
func BenchmarkMiddlewareBearer(b *testing.B) {
	s := NewStore(testRedis(b))
	_, _, tok := newToken(b, s, "org-bench")
	h := router(s)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/me", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

func BenchmarkMiddlewareBasic(b *testing.B) {
	s := NewStore(testRedis(b))
	id, sec := newCredential(b, s, "org-bench")
	h := router(s)
	auth := basic(id, sec)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/me", nil)
		req.Header.Set("Authorization", auth)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkMiddlewareBearerParallel is the same under concurrency, where the
// store batches the reads of concurrent requests into pipelines.
func BenchmarkMiddlewareBearerParallel(b *testing.B) {
	s := NewStore(testRedis(b))
	defer s.Close()
	_, _, tok := newToken(b, s, "org-bench")
	h := router(s)
	b.ReportAllocs()
	b.SetParallelism(25) // 50 goroutines on 2 CPUs, as in the load runs
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/me", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Error(w.Code)
				return
			}
		}
	})
}

// BenchmarkRouterWithoutAuthentication is the baseline: the same request
// through the same router, without the middleware.
func BenchmarkRouterWithoutAuthentication(b *testing.B) {
	e := httpx.New(httpx.Options{})
	e.GET("/me", func(c *gin.Context) { c.JSON(200, gin.H{"org": "org-bench", "client": "x"}) })
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/me", nil)
		req.Header.Set("Authorization", "Bearer x")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
	}
}
