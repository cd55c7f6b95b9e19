package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A token that stops working is replaced once, transparently.
func TestExpiredTokenIsReplacedOnce(t *testing.T) {
	t.Parallel()
	var minted atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/oauth2/token":
			if err := r.ParseForm(); err != nil || r.PostForm.Get("client_secret") != "s3cret" {
				w.WriteHeader(401)
				w.Write([]byte(`{"error":"invalid_client","error_description":"no"}`))
				return
			}
			n := minted.Add(1)
			w.Write([]byte(`{"token_type":"Bearer","access_token":"t` + string(rune('0'+n)) + `","expires_in":86400}`))
		case "/api/v1/listings":
			if r.Header.Get("Authorization") != "Bearer t2" {
				w.WriteHeader(401)
				w.Write([]byte(`{"error":"unauthorized","message":"expired"}`))
				return
			}
			w.Write([]byte(`{"listings":[{"id":"l1","nickname":"Loft","extra":true}]}`))
		default:
			w.WriteHeader(404)
			w.Write([]byte(`{"error":"not_found","message":"none"}`))
		}
	}))
	defer srv.Close()

	c := New(srv.URL+"/api/v1", "qc_x", "s3cret")
	ls, err := c.Listings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Nickname != "Loft" || string(ls[0].Raw) == "" || minted.Load() != 2 {
		t.Fatalf("listings %+v after %d mints", ls, minted.Load())
	}

	var apiErr *Error
	if err := c.Get(context.Background(), "/nope", nil); !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "not_found" {
		t.Fatalf("404: %v", err)
	}
	bad := New(srv.URL+"/api/v1", "qc_x", "wrong")
	if _, err := bad.Listings(context.Background()); !errors.As(err, &apiErr) || apiErr.Code != "invalid_client" || apiErr.Message != "no" {
		t.Fatalf("wrong secret: %v", err)
	}
}
