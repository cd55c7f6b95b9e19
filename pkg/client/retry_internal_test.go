package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scripted answers /oauth2/token with a token and every other request with
// the next answer of its script (the last one repeats).
type scripted struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	calls   map[string]int
	minted  int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/api/v1/oauth2/token" {
		s.minted++
		w.Write([]byte(`{"token_type":"Bearer","access_token":"tok-` + string(rune('0'+s.minted)) + `","expires_in":86400}`))
		return
	}
	s.calls[r.Method+" "+r.URL.Path]++
	i := min(s.calls[r.Method+" "+r.URL.Path]-1, len(s.answers)-1)
	s.answers[i](w)
}

func (s *scripted) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

func (s *scripted) mintedN() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minted
}

func answer(status int, body string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
}

// newScripted returns a client of a scripted server whose waits are
// recorded instead of slept.
func newScripted(t *testing.T, answers ...func(w http.ResponseWriter)) (*Client, *scripted, *[]time.Duration) {
	s := &scripted{answers: answers, calls: map[string]int{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := New(srv.URL+"/api/v1", "qc", "secret")
	var waits []time.Duration
	var mu sync.Mutex
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, s, &waits
}

const (
	unavailable = `{"error":"service_unavailable","message":"Try again shortly."}`
	limited     = `{"error":"rate_limited","message":"The daily inquiry allowance is spent."}`
	listings    = `{"listings":[]}`
)

func TestGetIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	c, s, waits := newScripted(t, answer(503, unavailable), answer(502, "<html>bad gateway</html>"), answer(200, listings))
	if _, err := c.Listings(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.count("GET /api/v1/listings") != 3 || len(*waits) != 2 {
		t.Fatalf("%d calls, waits %v", s.count("GET /api/v1/listings"), *waits)
	}
	p := DefaultRetryPolicy
	for i, w := range *waits {
		if w < 0 || w > p.MinDelay<<i {
			t.Errorf("wait %d: %v outside [0, %v]", i, w, p.MinDelay<<i)
		}
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	c, s, waits := newScripted(t, answer(429, limited, "Retry-After", "7"), answer(200, listings))
	if _, err := c.Listings(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.count("GET /api/v1/listings") != 2 || len(*waits) != 1 || (*waits)[0] != 7*time.Second {
		t.Fatalf("%d calls, waits %v", s.count("GET /api/v1/listings"), *waits)
	}

	// A Retry-After beyond the policy's bound is not waited for.
	c, s, waits = newScripted(t, answer(429, limited, "Retry-After", "3600"))
	_, err := c.Listings(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeRateLimited || e.Status != 429 || e.RetryAfter != time.Hour || len(*waits) != 0 || s.count("GET /api/v1/listings") != 1 {
		t.Fatalf("long Retry-After: %#v, waits %v", err, *waits)
	}
}

func TestGiveUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	c, s, _ := newScripted(t, answer(500, `{"error":"internal_error","message":"Server fault."}`))
	_, err := c.Listings(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInternalError || s.count("GET /api/v1/listings") != DefaultRetryPolicy.MaxAttempts {
		t.Fatalf("%v after %d calls", err, s.count("GET /api/v1/listings"))
	}
	// A 4xx other than 401 and 429 fails at once.
	c, s, _ = newScripted(t, answer(404, `{"error":"not_found","message":"No such listing."}`))
	if _, err := c.Listing(context.Background(), "l1"); !errors.As(err, &e) || e.Code != CodeNotFound || s.count("GET /api/v1/listings/l1") != 1 {
		t.Fatalf("404: %v after %d calls", err, s.count("GET /api/v1/listings/l1"))
	}
	c, s, _ = newScripted(t, answer(503, unavailable))
	c.retry = RetryPolicy{MaxAttempts: 1}.withDefaults()
	if _, err := c.Listings(context.Background()); !errors.As(err, &e) || s.count("GET /api/v1/listings") != 1 {
		t.Fatalf("without retries: %v after %d calls", err, s.count("GET /api/v1/listings"))
	}
}

// POST /inquiries creates an inquiry each time: it is never repeated, not
// after a 429, a 503 or a broken connection.
func TestInquiryIsNeverRetried(t *testing.T) {
	t.Parallel()
	for name, a := range map[string]func(http.ResponseWriter){
		"429": answer(429, limited, "Retry-After", "1"),
		"503": answer(503, unavailable, "Retry-After", "1"),
		"500": answer(500, `{"error":"internal_error","message":"Server fault."}`),
		"connection dropped": func(w http.ResponseWriter) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		},
	} {
		c, s, waits := newScripted(t, a, answer(201, `{"id":"inq_1"}`))
		_, err := c.CreateInquiry(context.Background(), InquiryInput{PropertyID: "p", LastName: "L", Email: "l@example.com"})
		if err == nil || s.count("POST /api/v1/inquiries") != 1 || len(*waits) != 0 {
			t.Errorf("%s: err %v after %d calls, waits %v", name, err, s.count("POST /api/v1/inquiries"), *waits)
		}
	}
	// A 401 is different: the inquiry was not created, so it is sent again
	// once with a new token.
	c, s, _ := newScripted(t, answer(401, `{"error":"unauthorized","message":"Expired."}`), answer(201, `{"id":"inq_2"}`))
	if id, err := c.CreateInquiry(context.Background(), map[string]any{"propertyId": "p"}); err != nil || id != "inq_2" || s.mintedN() != 2 {
		t.Fatalf("401: %q %v, %d tokens", id, err, s.mintedN())
	}
}

// A token is used until shortly before it expires, then replaced before a
// call is made with it.
func TestTokenRenewedBeforeExpiry(t *testing.T) {
	t.Parallel()
	c, s, _ := newScripted(t, answer(200, listings))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	c.now = func() time.Time { return *clock.Load() }
	at := func(d time.Duration) {
		t := now.Add(d)
		clock.Store(&t)
	}
	for _, step := range []struct {
		after  time.Duration
		minted int
	}{{0, 1}, {23 * time.Hour, 1}, {24*time.Hour - 6*time.Minute, 1}, {24*time.Hour - 4*time.Minute, 2}} {
		at(step.after)
		if _, err := c.Listings(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s.mintedN() != step.minted {
			t.Fatalf("after %v: %d tokens, want %d", step.after, s.mintedN(), step.minted)
		}
	}
}

func TestErrorBodies(t *testing.T) {
	t.Parallel()
	c, _, _ := newScripted(t, answer(409, `{"error":"conflict","message":"The organisation's contract provider is not external."}`))
	_, _, err := c.ReportAgreement(context.Background(), "r1", AgreementInput{ExternalID: "e", Status: AgreementSent})
	var e *Error
	if !errors.As(err, &e) || e.Status != 409 || e.Code != CodeConflict || !strings.Contains(e.Error(), "contract provider") {
		t.Fatalf("%#v", err)
	}
	c, _, _ = newScripted(t, answer(502, "<html>Bad Gateway</html>"))
	c.retry = RetryPolicy{MaxAttempts: 1}.withDefaults()
	if _, err := c.Listings(context.Background()); !errors.As(err, &e) || e.Status != 502 || e.Code != "" || e.Message != "<html>Bad Gateway</html>" {
		t.Fatalf("%#v", err)
	}
}

func TestRetryAfterDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"12":                            12 * time.Second,
		"-3":                            0,
		"Thu, 01 Jan 2026 00:01:30 GMT": 90 * time.Second,
		"Wed, 31 Dec 2025 23:00:00 GMT": 0,
		"soon":                          0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}

func TestEmptyAnswerLeavesOutAlone(t *testing.T) {
	t.Parallel()
	c, _, _ := newScripted(t, answer(204, ""))
	out := map[string]any{"kept": true}
	if err := c.Do(context.Background(), http.MethodPut, "/something", map[string]any{"a": 1}, &out); err != nil || out["kept"] != true {
		t.Fatalf("%v %v", out, err)
	}
}
