// Package httpx builds the gin engine every service serves its API with, so
// that the behaviour the API promises on every endpoint lives in one place:
// `Cache-Control: no-store` on every response (errors and 404s too), no CORS
// headers ever, the `{error, message}` body, a JSON 404 for unknown paths and
// methods, request ids, access logs, request metrics labelled by route
// template, spans, panic recovery and request body limits.
package httpx

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/reqid"
)

// DefaultMaxBodyBytes bounds request bodies unless a route says otherwise.
const DefaultMaxBodyBytes = 1 << 20

// Options configures New.
type Options struct {
	Log      *slog.Logger
	Registry prometheus.Registerer
	Tracer   trace.TracerProvider
	// MaxBodyBytes bounds every request body (413 beyond it).
	MaxBodyBytes int64
	// BodyLimits raises or lowers the bound for single routes, keyed by
	// "METHOD /route/:template".
	BodyLimits map[string]int64
	// AccessLog receives one JSON line per request, shaped like the
	// process's log/slog JSON lines; nil means no access log.
	AccessLog io.Writer
	// Service names the service in access log lines written to AccessLog.
	Service string
}

// New returns a gin engine with the shared middleware installed and JSON 404
// answers for unknown paths and methods.
func New(o Options) *gin.Engine {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Tracer == nil {
		o.Tracer = noop.NewTracerProvider()
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	// A path with a stray slash or another method is simply unknown: the
	// spec answers 404 for nonexistent paths, never a redirect or a 405.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = false
	e.ContextWithFallback = true

	m := newMetrics(o.Registry)
	e.Use(
		baseHeaders(o.Log),
		recovery(o.Log),
		instrument(o.accessLog(), m, o.Tracer),
		bodyLimit(o.MaxBodyBytes, o.BodyLimits),
	)
	e.NoRoute(notFound)
	e.NoMethod(notFound)
	return e
}

// accessLog is nil when no access log is wanted, so no line is formatted.
func (o Options) accessLog() *accessLog {
	if o.AccessLog == nil {
		return nil
	}
	return newAccessLog(o.AccessLog, o.Service)
}

func notFound(c *gin.Context) {
	Error(c, apperr.NotFoundf("No resource at %s %s.", c.Request.Method, c.Request.URL.Path))
}

// requestInfo is what the shared middleware knows of a request; it is stored
// once per request.
type requestInfo struct {
	id    string
	log   *slog.Logger
	orgID string
}

const infoKey = "quarters.request"

func info(c *gin.Context) *requestInfo {
	if v, ok := c.Get(infoKey); ok {
		if ri, ok := v.(*requestInfo); ok {
			return ri
		}
	}
	return &requestInfo{log: slog.Default()}
}

// baseHeaders sets what every response carries, assigns the request id and
// hands the logger to the error mapper.
func baseHeaders(log *slog.Logger) gin.HandlerFunc {
	ids := reqid.New()
	noStore := []string{"no-store"}
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h["Cache-Control"] = noStore
		id := c.GetHeader(RequestIDHeader)
		if !reqid.Valid(id) {
			id = ids.Next()
		}
		h[RequestIDHeader] = []string{id}
		c.Set(infoKey, &requestInfo{id: id, log: log})
		c.Next()
	}
}

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = reqid.Header

// RequestID returns the id of the request being served.
func RequestID(c *gin.Context) string { return info(c).id }

// SetOrg records the caller's organisation for the access log.
func SetOrg(c *gin.Context, orgID string) { info(c).orgID = orgID }

func recovery(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.ErrorContext(c.Request.Context(), "panic serving request",
					slog.Any("panic", p), slog.String("request_id", RequestID(c)),
					slog.String("path", c.Request.URL.Path), slog.String("stack", stack()))
				if !c.Writer.Written() {
					c.Writer.Header().Del("Content-Length")
					Error(c, apperr.New(apperr.Internal, "The server failed to handle the request. Retry later."))
				}
				c.Abort()
			}
		}()
		c.Next()
	}
}

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge

	// The children of the vectors per route, looked up once: resolving
	// label values hashes them on every call.
	mu     sync.RWMutex
	routes map[routeKey]*routeMetrics
}

type routeKey struct{ method, route string }

// methodLabel keeps the method label's values few: a client may send any
// method name.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

type routeMetrics struct {
	duration prometheus.Observer
	mu       sync.RWMutex
	codes    map[int]prometheus.Counter
}

func (m *metrics) route(method, route string) *routeMetrics {
	k := routeKey{method, route}
	m.mu.RLock()
	rm := m.routes[k]
	m.mu.RUnlock()
	if rm != nil {
		return rm
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rm = m.routes[k]; rm == nil {
		rm = &routeMetrics{duration: m.duration.WithLabelValues(method, route), codes: map[int]prometheus.Counter{}}
		m.routes[k] = rm
	}
	return rm
}

func (m *metrics) observe(method, route string, status int, elapsed time.Duration) {
	rm := m.route(method, route)
	rm.duration.Observe(elapsed.Seconds())
	rm.mu.RLock()
	c := rm.codes[status]
	rm.mu.RUnlock()
	if c == nil {
		c = m.requests.WithLabelValues(method, route, strconv.Itoa(status))
		rm.mu.Lock()
		rm.codes[status] = c
		rm.mu.Unlock()
	}
	c.Inc()
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		routes: map[routeKey]*routeMetrics{},
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "quarters_http_requests_total",
			Help: "HTTP requests served, by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quarters_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by method and route template.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
		inflight: f.NewGauge(prometheus.GaugeOpts{
			Name: "quarters_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
	}
}

var propagator = propagation.TraceContext{}

// instrument opens a span, records metrics and writes the access log line.
func instrument(access *accessLog, m *metrics, tp trace.TracerProvider) gin.HandlerFunc {
	tracer := tp.Tracer("quarters.dev/pkg/httpx")
	_, noopTracer := tp.(noop.TracerProvider)
	return func(c *gin.Context) {
		start := time.Now()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		r := c.Request
		ctx := r.Context()
		span := trace.SpanFromContext(ctx)
		// Without an exporter and without an incoming trace there is no
		// span to make or carry on.
		if !noopTracer || r.Header.Get("Traceparent") != "" {
			ctx = propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer))
			c.Request = r.WithContext(ctx)
		}
		m.inflight.Inc()

		c.Next()

		status := c.Writer.Status()
		elapsed := time.Since(start)
		m.inflight.Dec()
		m.observe(methodLabel(r.Method), route, status, elapsed)
		sc := span.SpanContext()
		if span.IsRecording() {
			span.SetAttributes(attribute.Int("http.response.status_code", status), attribute.String("http.route", route))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
		}
		span.End()
		if access == nil {
			return
		}
		ri := info(c)
		traceID := ""
		if sc.HasTraceID() {
			traceID = sc.TraceID().String()
		}
		access.write(accessEntry{
			method: r.Method, route: route, path: r.URL.Path, requestID: ri.id, traceID: traceID,
			orgID: ri.orgID, status: status, bytes: max(c.Writer.Size(), 0), duration: elapsed, at: start,
		})
	}
}

// OrgFirst answers a request under /orgs/{orgId} with check's error (the
// 404 of an unknown organisation) before the handler reads anything else,
// so that an unknown orgId answers 404 on every route whatever the body.
// It goes after the admin token check: a caller without the token learns
// nothing about which organisations exist.
func OrgFirst(check func(ctx context.Context, orgID string) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := check(c.Request.Context(), c.Param("orgId")); err != nil {
			Error(c, err)
			c.Abort()
			return
		}
		c.Next()
	}
}

func bodyLimit(def int64, perRoute map[string]int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		limit := def
		if n, ok := perRoute[c.Request.Method+" "+c.FullPath()]; ok {
			limit = n
		}
		r := c.Request
		if r.ContentLength > limit {
			// Tell the client not to send the rest and close the connection:
			// reading an oversized body to keep the connection would let any
			// caller make the server read without bound.
			c.Header("Connection", "close")
			Error(c, apperr.New(apperr.PayloadTooLarge, "The request body is larger than %d bytes.", limit))
			c.Abort()
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(c.Writer, r.Body, limit)
		}
		c.Next()
	}
}
