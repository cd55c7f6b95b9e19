package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client calls one organisation's API with one credential set. It is safe
// for concurrent use; create one per credential set and share it.
type Client struct {
	base         string
	clientID     string
	clientSecret string
	http         *http.Client
	basicToken   bool // client authentication at the token endpoint with HTTP Basic
	basicOnly    bool // HTTP Basic on every call, no token
	retry        RetryPolicy
	userAgent    string
	now          func() time.Time
	sleep        func(ctx context.Context, d time.Duration) error

	mu       sync.Mutex
	token    string
	expiry   time.Time // when to stop using token (shortly before it expires)
	inflight *tokenFlight
}

// tokenFlight is one token exchange that concurrent callers wait for.
type tokenFlight struct {
	done  chan struct{}
	token string
	err   error
}

// Option configures a Client; pass options to [New].
type Option func(*Client)

// WithHTTPClient sets the HTTP client that sends every request (default: a
// client with a 30 second timeout over http.DefaultTransport). Its timeout
// bounds a document transfer too: give large uploads and downloads a client
// without one, and a context deadline instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithBasicAuth sends the client id and secret to the token endpoint as
// HTTP Basic credentials (each form-encoded, as RFC 6749 section 2.3.1
// says) instead of as body fields.
func WithBasicAuth() Option {
	return func(c *Client) { c.basicToken = true }
}

// WithBasicAuthOnly skips the token exchange and sends the client id and
// secret as HTTP Basic credentials on every call, which the API accepts for
// tools that cannot keep a token. A token is the better choice: the secret
// then crosses the wire once a day rather than on every call.
func WithBasicAuthOnly() Option {
	return func(c *Client) { c.basicOnly = true }
}

// WithRetry sets the retry policy (default [DefaultRetryPolicy]).
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) { c.retry = p.withDefaults() }
}

// WithoutRetry makes every call a single attempt (a 401 still renews the
// token once).
func WithoutRetry() Option {
	return func(c *Client) { c.retry = RetryPolicy{MaxAttempts: 1} }
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a client of the API at baseURL (ending in /api/v1) for the
// credential set clientID and clientSecret.
func New(baseURL, clientID, clientSecret string, opts ...Option) *Client {
	c := &Client{
		base:         strings.TrimRight(baseURL, "/"),
		clientID:     clientID,
		clientSecret: clientSecret,
		http:         &http.Client{Timeout: 30 * time.Second},
		retry:        DefaultRetryPolicy,
		userAgent:    "quarters-go-client",
		now:          time.Now,
		sleep:        sleepCtx,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// RetryPolicy says how often and how long a Client retries a call that may
// safely be repeated: a GET (and a PUT whose body can be sent again, which
// the API defines as idempotent) that failed in transport or answered 429,
// 500, 502, 503 or 504. A POST (an inquiry) is never retried: repeating it
// would create a second inquiry.
//
// Between attempts the client waits a random time between zero and
// MinDelay·2^n, capped at MaxDelay ("full jitter"), or the Retry-After the
// answer names when there is one. A Retry-After longer than MaxRetryAfter
// is not waited for: the call fails with an [*Error] whose RetryAfter says
// when to come back.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt; 1 disables retries.
	MaxAttempts int
	// MinDelay is the backoff base.
	MinDelay time.Duration
	// MaxDelay caps one backoff wait.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After honoured.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is the policy of a Client made without [WithRetry].
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, MinDelay: 250 * time.Millisecond, MaxDelay: 8 * time.Second, MaxRetryAfter: time.Minute}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts < 1 {
		p.MaxAttempts = 1
	}
	if p.MinDelay <= 0 {
		p.MinDelay = DefaultRetryPolicy.MinDelay
	}
	if p.MaxDelay < p.MinDelay {
		p.MaxDelay = p.MinDelay
	}
	if p.MaxRetryAfter < 0 {
		p.MaxRetryAfter = 0
	}
	return p
}

// backoff returns the wait before retry n (0 for the first retry).
func (p RetryPolicy) backoff(n int) time.Duration {
	ceiling := p.MaxDelay
	if n < 30 {
		if d := p.MinDelay << n; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return rand.N(ceiling + 1)
}

// The error slugs of the API (Error.Code). The token endpoint adds
// CodeInvalidClient, CodeUnsupportedGrantType and CodeTemporarilyUnavailable.
const (
	CodeInvalidRequest         = "invalid_request"
	CodeUnauthorized           = "unauthorized"
	CodeNotFound               = "not_found"
	CodeConflict               = "conflict"
	CodePayloadTooLarge        = "payload_too_large"
	CodeUnsupportedMediaType   = "unsupported_media_type"
	CodeRateLimited            = "rate_limited"
	CodeInternalError          = "internal_error"
	CodeServiceUnavailable     = "service_unavailable"
	CodeInvalidClient          = "invalid_client"
	CodeUnsupportedGrantType   = "unsupported_grant_type"
	CodeTemporarilyUnavailable = "temporarily_unavailable"
)

// Error is an API error: the HTTP status and the `{error, message}` body
// (or the token endpoint's `{error, error_description}`). Switch on Code,
// the stable slug; Message is for people. Use errors.As to get one:
//
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == client.CodeNotFound { ... }
type Error struct {
	// Status is the HTTP status code.
	Status int `json:"-"`
	// Code is the error slug, e.g. "not_found"; empty when the answer
	// carried no error body (a proxy's 502, say).
	Code string `json:"error"`
	// Message is a sentence for a person.
	Message string `json:"message"`
	// RetryAfter is the wait the answer asked for (Retry-After), zero when
	// it named none.
	RetryAfter time.Duration `json:"-"`
}

// Error formats the status, the slug and the message.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// TokenError is the RFC 6749 error body of the token endpoint; the client
// returns it as an [*Error].
type TokenError struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// TokenRequest is the body of the token exchange (form-encoded).
type TokenRequest struct {
	GrantType    string `json:"grant_type"`
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
}

// Token is a token exchange result.
type Token struct {
	TokenType   string `json:"token_type"`
	AccessToken string `json:"access_token"`
	// ExpiresIn is the lifetime in seconds (86400).
	ExpiresIn int `json:"expires_in"`
}

// FetchToken exchanges the credential set for a new access token, which the
// client then uses for its calls. Calls fetch and renew tokens on their own;
// FetchToken serves to check credentials up front.
func (c *Client) FetchToken(ctx context.Context) (Token, error) {
	t, err := c.exchange(ctx)
	if err != nil {
		return Token{}, err
	}
	c.mu.Lock()
	c.store(t)
	c.mu.Unlock()
	return t, nil
}

// exchange calls the token endpoint once.
func (c *Client) exchange(ctx context.Context) (Token, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if !c.basicToken {
		form.Set("client_id", c.clientID)
		form.Set("client_secret", c.clientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.basicToken {
		req.SetBasicAuth(url.QueryEscape(c.clientID), url.QueryEscape(c.clientSecret))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Token{}, err // a *url.Error, which names the endpoint
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Token{}, c.errorFrom(resp)
	}
	var t Token
	if err := decodeJSON(resp.Body, &t); err != nil {
		return Token{}, fmt.Errorf("token exchange: %w", err)
	}
	if t.AccessToken == "" {
		return Token{}, errors.New("token exchange: answer carries no access_token")
	}
	return t, nil
}

// store caches t; c.mu is held.
func (c *Client) store(t Token) {
	life := time.Duration(t.ExpiresIn) * time.Second
	if life <= 0 {
		life = 24 * time.Hour
	}
	// Renew shortly before expiry: five minutes, or a tenth of a short
	// lifetime, so that a call never leaves with a token about to lapse.
	margin := min(5*time.Minute, life/10)
	c.token = t.AccessToken
	c.expiry = c.now().Add(life - margin)
}

// accessToken returns a token to send: the cached one while it is fresh
// and differs from stale, otherwise a new one. Concurrent callers share a
// single exchange; each stops waiting when its own ctx ends.
func (c *Client) accessToken(ctx context.Context, stale string) (string, error) {
	for {
		c.mu.Lock()
		if c.token != "" && c.token != stale && c.now().Before(c.expiry) {
			t := c.token
			c.mu.Unlock()
			return t, nil
		}
		f := c.inflight
		if f == nil {
			f = &tokenFlight{done: make(chan struct{})}
			c.inflight = f
			// The exchange outlives the caller that started it: the others
			// wait for it too.
			go c.runExchange(context.WithoutCancel(ctx), f)
		}
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if f.err != nil {
			return "", f.err
		}
		if f.token != stale {
			return f.token, nil
		}
		// The flight began before the stale token was rejected and minted
		// that same token; start another.
	}
}

// invalidate forgets token if it is the cached one.
func (c *Client) invalidate(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == token {
		c.token = ""
	}
}

func (c *Client) runExchange(ctx context.Context, f *tokenFlight) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	t, err := c.exchange(ctx)
	c.mu.Lock()
	if err == nil {
		c.store(t)
		f.token = t.AccessToken
	}
	f.err = err
	c.inflight = nil
	c.mu.Unlock()
	close(f.done)
}

// Get calls GET path (relative to the base URL, query included) and
// decodes the JSON answer into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.Do(ctx, http.MethodGet, path, nil, out)
}

// Do calls the API with a JSON body (nil for none) and decodes the JSON
// answer into out (nil to discard it). A 401 renews the token and repeats
// the call once; GET and PUT are retried by the client's [RetryPolicy],
// other methods never.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	r := call{method: method, path: path}
	if body != nil {
		payload, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s %s body: %w", method, path, err)
		}
		r.contentType = "application/json"
		r.size = int64(len(payload))
		r.body = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(payload)), nil }
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := decodeJSON(resp.Body, out); err != nil && !errors.Is(err, io.EOF) {
		// An empty answer (204) leaves out as it was.
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// call is one API call, possibly sent more than once.
type call struct {
	method, path string
	contentType  string
	accept       string
	size         int64 // Content-Length when body is set; -1 unknown
	// body returns the body from its start; nil for no body. A body that
	// cannot be produced again (a plain reader) sets once.
	body func() (io.ReadCloser, error)
	once bool
}

// idempotent reports whether the call may be sent again after an attempt
// that may have reached the server.
func (r call) idempotent() bool {
	switch r.method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPut:
		return !r.once
	}
	return false
}

// send sends r until it succeeds, fails for good or runs out of attempts,
// and returns the 2xx answer with its body unread.
func (c *Client) send(ctx context.Context, r call) (*http.Response, error) {
	stale := ""
	renewed := false
	sent := false
	for attempt := 0; ; {
		if sent && r.once {
			return nil, fmt.Errorf("%s %s: the body cannot be sent again", r.method, r.path)
		}
		req, err := c.request(ctx, r, stale)
		if err != nil {
			return nil, err
		}
		sent = true
		resp, err := c.http.Do(req)
		var apiErr *Error
		if err == nil && resp.StatusCode < 300 {
			return resp, nil
		}
		if err == nil {
			apiErr = c.errorFrom(resp)
			resp.Body.Close()
			if apiErr.Status == http.StatusUnauthorized && !renewed && !c.basicOnly {
				// The token was revoked or expired early: renew it once,
				// sharing the renewal with concurrent callers.
				if r.once {
					// The body is spent; drop the rejected token so that
					// the next call starts with a new one.
					c.invalidate(bearerOf(req))
					return nil, apiErr
				}
				renewed = true
				stale = bearerOf(req)
				continue
			}
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		attempt++
		if !r.idempotent() || attempt >= c.retry.MaxAttempts || (apiErr != nil && !retryable(apiErr.Status)) {
			if apiErr != nil {
				return nil, apiErr
			}
			return nil, err // a *url.Error, which names the method and URL
		}
		wait := c.retry.backoff(attempt - 1)
		if apiErr != nil && apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > c.retry.MaxRetryAfter {
				return nil, apiErr
			}
			wait = apiErr.RetryAfter
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// request builds one attempt of r. stale is a token the server rejected.
func (c *Client) request(ctx context.Context, r call, stale string) (*http.Request, error) {
	var body io.ReadCloser
	if r.body != nil {
		var err error
		if body, err = r.body(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, body)
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	if r.body != nil {
		req.ContentLength = r.size
		if r.size == 0 {
			req.Body = http.NoBody
		}
		req.Header.Set("Content-Type", r.contentType)
	}
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if c.basicOnly {
		req.SetBasicAuth(c.clientID, c.clientSecret)
		return req, nil
	}
	token, err := c.accessToken(ctx, stale)
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req, nil
}

func bearerOf(req *http.Request) string {
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
}

// errorFrom turns a failed answer into an *Error.
func (c *Client) errorFrom(resp *http.Response) *Error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error            string `json:"error"`
		Message          string `json:"message"`
		ErrorDescription string `json:"error_description"`
	}
	e := &Error{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), c.now())}
	if json.Unmarshal(data, &body) == nil {
		e.Code = body.Error
		e.Message = body.Message
		if e.Message == "" {
			e.Message = body.ErrorDescription
		}
	}
	if e.Code == "" && e.Message == "" {
		e.Message = strings.TrimSpace(string(data))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200]
		}
	}
	return e
}

// retryAfter parses a Retry-After value: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(min(s, int64(365*24*3600))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func decodeJSON(r io.Reader, out any) error {
	if err := json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
