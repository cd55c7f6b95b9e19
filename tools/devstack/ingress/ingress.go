// Package ingress is the dev stack's local ingress: it routes /api/v1 and
// /admin/v1 by the one routing table to the owning service and answers
// /healthz and /readyz itself.
//
// It is net/http/httputil's ReverseProxy over one shared http.Transport that
// keeps enough connections alive per service, with every body read and write
// on either side bounded by a stall timeout.
package ingress

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"time"

	"quarters.dev/pkg/jsonresp"
	"quarters.dev/pkg/reqid"
	"quarters.dev/pkg/routes"
)

// ReadyFunc reports whether every started service is ready, with each
// service's state.
type ReadyFunc func(ctx context.Context) (ready bool, services map[string]string)

// Options configure an Ingress.
type Options struct {
	// Ready backs GET /readyz. Nil means always ready with no services.
	Ready ReadyFunc
	// Local serves a service in-process instead of proxying to it (the SMTP
	// sink's admin route).
	Local map[string]http.Handler
	// ResponseTimeout bounds how long an upstream may take to answer and how
	// long any single body read or write may stall. Zero means two minutes.
	ResponseTimeout time.Duration
	// StandardTransport sends every request through net/http's Transport
	// instead of the ingress's own connection pool (see poolTransport); the
	// benchmark compares the two.
	StandardTransport bool
}

// Ingress is an http.Handler; see the package comment.
type Ingress struct {
	table     *routes.Table
	opts      Options
	targets   map[string]*target
	reqIDs    *reqid.Generator
	transport *http.Transport
	// roundTripper is what the proxies send with: the pool, or transport.
	roundTripper http.RoundTripper
}

// A target is what a route points at: a service that may or may not be
// running right now.
type target struct {
	name        string
	local       http.Handler
	proxy       atomic.Pointer[httputil.ReverseProxy]
	unavailable []byte
}

// New builds an ingress for every service of table. Every service starts as
// not running until SetUpstream gives it an address.
func New(table *routes.Table, opts Options) *Ingress {
	if opts.ResponseTimeout <= 0 {
		opts.ResponseTimeout = 2 * time.Minute
	}
	in := &Ingress{table: table, opts: opts, targets: map[string]*target{},
		reqIDs: reqid.New(), transport: newTransport(opts.ResponseTimeout)}
	in.roundTripper = in.transport
	if !opts.StandardTransport {
		in.roundTripper = newPoolTransport(in.transport.DialContext, in.transport)
	}
	for _, name := range table.Services() {
		in.targets[name] = &target{
			name:        name,
			local:       opts.Local[name],
			unavailable: jsonresp.ErrorBody("service_unavailable", "the "+name+" service is not running"),
		}
	}
	return in
}

// Server returns the HTTP server the ingress runs in: no overall read or
// write timeout (26 MB uploads and long downloads must pass), but a bound on
// slow headers and idle connections; body stalls are bounded per read and
// write by the proxy itself.
func (in *Ingress) Server(errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           in,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          errorLog,
	}
}

// SetUpstream points service at the API address addr ("host:port"); an empty
// addr marks it not running, so its routes answer 503.
func (in *Ingress) SetUpstream(service, addr string) {
	t := in.targets[service]
	if t == nil {
		return
	}
	if addr == "" {
		t.proxy.Store(nil)
		return
	}
	t.proxy.Store(in.newProxy(service, addr))
}

// Close drops every idle upstream connection.
func (in *Ingress) Close() {
	for _, t := range in.targets {
		t.proxy.Store(nil)
	}
	in.roundTripper.(interface{ CloseIdleConnections() }).CloseIdleConnections()
}

// ServeHTTP implements http.Handler.
func (in *Ingress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if !underPrefix(path, "/api/v1") && !underPrefix(path, "/admin/v1") {
		switch path {
		case "/healthz":
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				jsonresp.WriteBytes(w, http.StatusOK, healthzBody)
				return
			}
		case "/readyz":
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				in.serveReady(w, r)
				return
			}
		}
		jsonresp.WriteBytes(w, http.StatusNotFound, notFoundBody)
		return
	}
	if hasDotSegment(path) {
		jsonresp.WriteBytes(w, http.StatusNotFound, notFoundBody)
		return
	}
	route, ok := in.table.Match(path)
	if !ok {
		jsonresp.WriteBytes(w, http.StatusNotFound, notFoundBody)
		return
	}
	t := in.targets[route.Service]
	if t == nil {
		jsonresp.WriteBytes(w, http.StatusNotFound, notFoundBody)
		return
	}
	if t.local != nil {
		t.local.ServeHTTP(w, r)
		return
	}
	p := t.proxy.Load()
	if p == nil {
		jsonresp.WriteBytes(w, http.StatusServiceUnavailable, t.unavailable)
		return
	}
	in.serveProxy(w, r, p)
}

func (in *Ingress) serveReady(w http.ResponseWriter, r *http.Request) {
	ready, services := true, map[string]string{}
	if in.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		ready, services = in.opts.Ready(ctx)
		cancel()
	}
	body := struct {
		Status   string            `json:"status"`
		Services map[string]string `json:"services"`
	}{Status: "ready", Services: services}
	code := http.StatusOK
	if !ready {
		body.Status, code = "not_ready", http.StatusServiceUnavailable
	}
	b, _ := json.Marshal(body)
	jsonresp.WriteBytes(w, code, b)
}

// underPrefix reports whether path is prefix itself or below it.
func underPrefix(path, prefix string) bool {
	return strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
}

// hasDotSegment reports a "." or ".." segment, which the services would
// resolve differently from the routing table.
func hasDotSegment(path string) bool {
	for i := strings.Index(path, "/."); i >= 0; {
		rest := path[i+2:]
		if rest == "" || rest[0] == '/' || rest == "." || strings.HasPrefix(rest, "./") {
			return true
		}
		j := strings.Index(rest, "/.")
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}

var (
	healthzBody  = []byte(`{"status":"ok"}`)
	notFoundBody = jsonresp.ErrorBody("not_found", "no such path")
)
