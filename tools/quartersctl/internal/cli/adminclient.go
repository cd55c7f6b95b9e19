package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"quarters.dev/pkg/client"
)

// adminClient calls /admin/v1 with the admin token.
type adminClient struct {
	base  string
	token string
	http  *http.Client
}

// do sends one request with a JSON body (nil for none) and returns the
// answer's body; a status of 300 or more is a *client.Error.
func (c *adminClient) do(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
		return nil, &client.Error{Status: resp.StatusCode, Code: e.Error, Message: e.Message}
	}
	return data, nil
}

// get, post, put, patch and del are do with the method named.
func (c *adminClient) get(ctx context.Context, path string) (json.RawMessage, error) {
	return c.do(ctx, http.MethodGet, path, nil)
}

func (c *adminClient) post(ctx context.Context, path string, body any) (json.RawMessage, error) {
	return c.do(ctx, http.MethodPost, path, body)
}

func (c *adminClient) del(ctx context.Context, path string) error {
	_, err := c.do(ctx, http.MethodDelete, path, nil)
	return err
}

// orgPath is /orgs/{org} followed by the escaped segments.
func orgPath(org string, segs ...string) string {
	p := "/orgs/" + url.PathEscape(org)
	for _, s := range segs {
		p += "/" + url.PathEscape(s)
	}
	return p
}
