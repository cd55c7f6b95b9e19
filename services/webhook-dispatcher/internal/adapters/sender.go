package adapters

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// ResponseLimit is how much of a receiver's response body is read. The
// transport does not decompress, so this bounds the bytes received.
const ResponseLimit = 4 << 10

// Resolver looks up the addresses of a host name.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// SenderConfig sets up a Sender.
type SenderConfig struct {
	// HeaderPrefix is the middle segment of the x-<prefix>-event,
	// x-<prefix>-delivery and x-<prefix>-signature headers.
	HeaderPrefix string
	// Timeout bounds one attempt from dialling to the last byte read.
	Timeout time.Duration
	// AllowHTTP accepts http:// endpoints (the dev stack only).
	AllowHTTP bool
	// AllowPrivate lets the dialler reach non-public addresses (the dev
	// stack only).
	AllowPrivate bool
	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
	// RootCAs replaces the system roots (tests only); nil uses the system's.
	RootCAs *x509.CertPool
	// MaxConnsPerHost bounds the connections to one receiver host.
	MaxConnsPerHost int
}

// Sender makes one HTTP attempt per delivery, with the safety rules of the
// webhook contract: https only, public addresses only (checked on the address
// dialled), no proxy, no redirects, a total timeout and a capped read.
type Sender struct {
	client *http.Client
	cfg    SenderConfig
	events string
	ids    string
	sigs   string
}

// NewSender returns a Sender.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.HeaderPrefix == "" {
		cfg.HeaderPrefix = "legacy"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		dialer.Control = dialControl
	}
	transport := &http.Transport{
		// Proxy variables are ignored: a proxy would dial on our behalf and
		// the address check would see only the proxy.
		Proxy:                  nil,
		DialContext:            resolvingDialer(dialer, cfg.Resolver),
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		DisableCompression:     true,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    16,
		MaxConnsPerHost:        cfg.MaxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &Sender{
		cfg: cfg,
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// The first response is the answer; a redirect is not followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		events: "x-" + cfg.HeaderPrefix + "-event",
		ids:    "x-" + cfg.HeaderPrefix + "-delivery",
		sigs:   "x-" + cfg.HeaderPrefix + "-signature",
	}
}

// resolvingDialer resolves the host with r and dials its addresses in turn
// with d, whose Control hook refuses non-public ones.
func resolvingDialer(d *net.Dialer, r Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var ips []netip.Addr
		if ip, perr := netip.ParseAddr(host); perr == nil {
			ips = []netip.Addr{ip}
		} else {
			ips, err = r.LookupNetIP(ctx, "ip", host)
			if err != nil {
				return nil, fmt.Errorf("resolve %s: %w", host, err)
			}
		}
		var errs []error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		if len(errs) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
		return nil, errors.Join(errs...)
	}
}

// Send makes one attempt of sending body to endpoint and classifies the
// result.
func (s *Sender) Send(ctx context.Context, ep domain.Endpoint, d domain.Delivery) domain.Outcome {
	start := time.Now()
	out := s.send(ctx, ep, d)
	out.Duration = time.Since(start)
	return out
}

func (s *Sender) send(ctx context.Context, ep domain.Endpoint, d domain.Delivery) domain.Outcome {
	u, err := url.Parse(ep.URL)
	if err != nil || u.Host == "" {
		return domain.Outcome{Reason: domain.ReasonInvalidURL, Error: "invalid URL"}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && s.cfg.AllowHTTP:
	default:
		return domain.Outcome{Reason: domain.ReasonInvalidURL, Error: "invalid URL: only https endpoints are accepted"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(d.Body))
	if err != nil {
		return domain.Outcome{Reason: domain.ReasonInvalidURL, Error: "invalid URL: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Quarters-Webhooks/1")
	req.Header.Set(s.events, d.Event)
	req.Header.Set(s.ids, d.DeliveryID)
	req.Header.Set(s.sigs, domain.Sign(ep.Secret, d.Body))
	resp, err := s.client.Do(req)
	if err != nil {
		return classify(ctx, err)
	}
	// Read a little of the body so the connection can be reused, and no
	// more: a receiver cannot make us read without bound.
	_, rerr := io.Copy(io.Discard, io.LimitReader(resp.Body, ResponseLimit))
	resp.Body.Close()
	// A receiver that has not finished answering within the time has
	// failed, whatever its status line said.
	var netErr net.Error
	if ctx.Err() != nil || errors.Is(rerr, context.DeadlineExceeded) || (errors.As(rerr, &netErr) && netErr.Timeout()) {
		return domain.Outcome{StatusCode: resp.StatusCode, Reason: domain.ReasonTimeout, Error: "timeout"}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return domain.Outcome{StatusCode: resp.StatusCode, Reason: domain.ReasonNon2xx, Error: "non-2xx: " + strconv.Itoa(resp.StatusCode)}
	}
	return domain.Outcome{Delivered: true, StatusCode: resp.StatusCode}
}

// classify names why a request failed.
func classify(ctx context.Context, err error) domain.Outcome {
	var (
		netErr      net.Error
		recordErr   tls.RecordHeaderError
		certErr     *tls.CertificateVerificationError
		alertErr    tls.AlertError
		unknownAuth x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidCert x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, ErrRefusedAddress):
		return domain.Outcome{Reason: domain.ReasonRefusedAddress, Error: unwrapURL(err)}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || (errors.As(err, &netErr) && netErr.Timeout()):
		return domain.Outcome{Reason: domain.ReasonTimeout, Error: "timeout"}
	case errors.As(err, &recordErr), errors.As(err, &certErr), errors.As(err, &alertErr),
		errors.As(err, &unknownAuth), errors.As(err, &hostnameErr), errors.As(err, &invalidCert):
		return domain.Outcome{Reason: domain.ReasonTLSError, Error: "TLS error: " + unwrapURL(err)}
	default:
		return domain.Outcome{Reason: domain.ReasonConnectionError, Error: "connection error: " + unwrapURL(err)}
	}
}

// unwrapURL drops the *url.Error wrapper, whose message repeats the method
// and the whole URL.
func unwrapURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

// CloseIdle closes idle connections.
func (s *Sender) CloseIdle() { s.client.CloseIdleConnections() }
