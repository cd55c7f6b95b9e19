package contract

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// Reporter receives the contract failures of an exchange; *testing.T is one.
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type reporterKey struct{}

// WithReporter returns a context whose requests report their contract
// failures to r (a Transport reads it).
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// ReporterFrom returns the reporter a context carries.
func ReporterFrom(ctx context.Context) (Reporter, bool) {
	r, ok := ctx.Value(reporterKey{}).(Reporter)
	return r, ok
}

// Transport is an http.RoundTripper that checks every exchange it carries.
type Transport struct {
	// Base sends the requests (http.DefaultTransport when nil).
	Base http.RoundTripper
	// Checker checks them (Default() when nil).
	Checker *Checker
	// Match selects the requests to check (all when nil).
	Match func(*http.Request) bool
	// Reporter receives the failures of requests whose context carries none.
	// When nil, such failures are dropped.
	Reporter Reporter
}

// RoundTrip sends the request, reads the whole response, checks the exchange
// and hands the response on with its body intact.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Match != nil && !t.Match(req) {
		return base.RoundTrip(req)
	}
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		sent := req.Clone(req.Context())
		sent.Body = io.NopCloser(bytes.NewReader(reqBody))
		sent.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }
		req = sent
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))

	checker := t.Checker
	if checker == nil {
		if checker, err = Default(); err != nil {
			return nil, err
		}
	}
	problems := checker.Check(Exchange{Request: req, RequestBody: reqBody, Response: resp, ResponseBody: respBody})
	if len(problems) > 0 {
		r, ok := ReporterFrom(req.Context())
		if !ok {
			r = t.Reporter
		}
		if r != nil {
			r.Helper()
			for _, p := range problems {
				r.Errorf("contract: %s", p)
			}
		}
	}
	return resp, nil
}
