package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"quarters.dev/pkg/client"
)

// 100 callers starting at once share one token exchange, and after the
// token is revoked, one renewal.
func TestConcurrentCallersShareOneTokenExchange(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	api.add(3, false)
	c := client.New(api.URL(), "qc_demo", "s3cret")
	run := func() {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		start := make(chan struct{})
		for range 100 {
			wg.Go(func() {
				<-start
				p, err := c.Reservations(context.Background(), client.ReservationQuery{Sort: client.SortUpdatedAt})
				if err == nil && len(p.Reservations) != 3 {
					err = errors.New("wrong page")
				}
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if n := api.mintedCount(); n != 1 {
		t.Fatalf("first use: %d token requests, want 1", n)
	}
	run() // the cached token serves
	if n := api.mintedCount(); n != 1 {
		t.Fatalf("with a cached token: %d token requests, want 1", n)
	}
	api.revokeAll()
	run()
	if n := api.mintedCount(); n != 2 {
		t.Fatalf("after revocation: %d token requests, want 2", n)
	}
}

func TestTokenExchangeFailures(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	var apiErr *client.Error
	_, err := client.New(api.URL(), "qc_demo", "wrong").Reservations(context.Background(), client.ReservationQuery{Sort: client.SortUpdatedAt})
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Code != client.CodeInvalidClient || apiErr.Message != "Unknown client or wrong secret." {
		t.Fatalf("wrong secret: %#v", err)
	}
	// HTTP Basic client authentication reaches the same result.
	tok, err := client.New(api.URL(), "qc_demo", "s3cret", client.WithBasicAuth()).FetchToken(context.Background())
	if err != nil || tok.AccessToken == "" || tok.ExpiresIn != 86400 || tok.TokenType != "Bearer" {
		t.Fatalf("basic: %+v %v", tok, err)
	}
}

// A caller whose context ends stops waiting for the shared exchange; the
// others still get their token.
func TestCancelledCallerDoesNotSpoilTheExchange(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	c := client.New(api.URL(), "qc_demo", "s3cret")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Reservations(ctx, client.ReservationQuery{Sort: client.SortUpdatedAt}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	if _, err := c.Reservations(context.Background(), client.ReservationQuery{Sort: client.SortUpdatedAt}); err != nil {
		t.Fatal(err)
	}
}

// HTTP Basic on every call needs no token.
func TestBasicAuthOnly(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	api.add(2, false)
	p, err := client.New(api.URL(), "qc_demo", "s3cret", client.WithBasicAuthOnly()).Reservations(context.Background(), client.ReservationQuery{Sort: client.SortUpdatedAt})
	if err != nil || len(p.Reservations) != 2 || api.mintedCount() != 0 {
		t.Fatalf("%+v %v, %d tokens", p, err, api.mintedCount())
	}
	_, err = client.New(api.URL(), "qc_demo", "wrong", client.WithBasicAuthOnly()).Reservations(context.Background(), client.ReservationQuery{Sort: client.SortUpdatedAt})
	if !isCode(err, client.CodeUnauthorized) {
		t.Fatalf("wrong secret: %v", err)
	}
}
