// Package client is the Go client of the Quarters public API: it exchanges
// the credential set for a token, sends it on every call, mints a new one when
// a call answers 401, and turns error bodies into *Error values.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Client calls one organisation's API with one credential set.
type Client struct {
	base         string
	clientID     string
	clientSecret string
	http         *http.Client

	mu    sync.Mutex
	token string
}

// New returns a client of the API at baseURL (ending in /api/v1).
func New(baseURL, clientID, clientSecret string) *Client {
	return &Client{
		base:         strings.TrimRight(baseURL, "/"),
		clientID:     clientID,
		clientSecret: clientSecret,
		http:         &http.Client{Timeout: 30 * time.Second},
	}
}

// Error is an API error: the status and the `{error, message}` body (or the
// token endpoint's `{error, error_description}`).
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// Token is a token exchange result.
type Token struct {
	TokenType   string `json:"token_type"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
}

// FetchToken exchanges the credential set for a new access token.
func (c *Client) FetchToken(ctx context.Context) (Token, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.clientID}, "client_secret": {c.clientSecret}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var t Token
	if err := c.send(req, &t); err != nil {
		return Token{}, err
	}
	c.mu.Lock()
	c.token = t.AccessToken
	c.mu.Unlock()
	return t, nil
}

// Get calls GET path (relative to the base URL) and decodes the JSON answer
// into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.Do(ctx, http.MethodGet, path, nil, out)
}

// Do calls the API with a JSON body (nil for none). A 401 mints a new token
// and retries once.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	renewed := false
	for {
		c.mu.Lock()
		token := c.token
		c.mu.Unlock()
		if token == "" {
			if _, err := c.FetchToken(ctx); err != nil {
				return err
			}
			continue
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(payload))
		if err != nil {
			return err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		err = c.send(req, out)
		if e, ok := err.(*Error); ok && e.Status == http.StatusUnauthorized && !renewed {
			renewed = true
			c.mu.Lock()
			if c.token == token {
				c.token = ""
			}
			c.mu.Unlock()
			continue
		}
		return err
	}
}

// Listing is the subset of the Listing resource the client names; the API
// sends more fields, which are kept in Raw.
type Listing struct {
	ID          string          `json:"id"`
	Nickname    string          `json:"nickname"`
	Slug        string          `json:"slug"`
	Timezone    string          `json:"timezone"`
	PublishedAt time.Time       `json:"publishedAt"`
	Raw         json.RawMessage `json:"-"`
}

// Listings returns every published listing of the organisation.
func (c *Client) Listings(ctx context.Context) ([]Listing, error) {
	var out struct {
		Listings []json.RawMessage `json:"listings"`
	}
	if err := c.Get(ctx, "/listings", &out); err != nil {
		return nil, err
	}
	ls := make([]Listing, len(out.Listings))
	for i, raw := range out.Listings {
		if err := json.Unmarshal(raw, &ls[i]); err != nil {
			return nil, fmt.Errorf("decode listing: %w", err)
		}
		ls[i].Raw = raw
	}
	return ls, nil
}

func (c *Client) send(req *http.Request, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error            string `json:"error"`
			Message          string `json:"message"`
			ErrorDescription string `json:"error_description"`
		}
		_ = json.Unmarshal(data, &e)
		msg := e.Message
		if msg == "" {
			msg = e.ErrorDescription
		}
		return &Error{Status: resp.StatusCode, Code: e.Error, Message: msg}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}
