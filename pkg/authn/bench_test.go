package authn

import (
	"context"
	"net/http/httptest"
	"testing"
)

// BenchmarkMiddlewareBearer measures one authenticated request through the
// middleware against the Redis of testRedis (the local one when it answers).
func BenchmarkMiddlewareBearer(b *testing.B) {
	s := NewStore(testRedis(b))
	id, sec := newCredential(b, s, "org-bench")
	p, _ := s.VerifySecret(context.Background(), id, sec)
	tok, _ := s.Mint(context.Background(), p)
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
