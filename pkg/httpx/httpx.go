// Package httpx builds the gin engine every service serves its API with, so
// that the behaviour the API promises on every endpoint lives in one place:
// `Cache-Control: no-store` on every response (errors and 404s too), no CORS
// headers ever, the `{error, message}` body, a JSON 404 for unknown paths and
// methods, request ids, access logs, request metrics labelled by route
// template, spans, panic recovery and request body limits.
package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
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
		instrument(o.Log, m, o.Tracer.Tracer("quarters.dev/pkg/httpx")),
		bodyLimit(o.MaxBodyBytes, o.BodyLimits),
	)
	e.NoRoute(notFound)
	e.NoMethod(notFound)
	return e
}

func notFound(c *gin.Context) {
	Error(c, apperr.NotFoundf("No resource at %s %s.", c.Request.Method, c.Request.URL.Path))
}

// baseHeaders sets what every response carries, assigns the request id and
// hands the logger to the error mapper.
func baseHeaders(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Set(logKey, log)
		setBase(c)
	}
}

func setBase(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-store")
	id := c.GetHeader(RequestIDHeader)
	if !validRequestID(id) {
		id = newRequestID()
	}
	h.Set(RequestIDHeader, id)
	c.Set(requestIDKey, id)
	c.Next()
}

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "X-Request-Id"

const requestIDKey = "quarters.request_id"

// RequestID returns the id of the request being served.
func RequestID(c *gin.Context) string { return c.GetString(requestIDKey) }

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; b < 0x21 || b > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

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
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
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
func instrument(log *slog.Logger, m *metrics, tracer trace.Tracer) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		r := c.Request
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer))
		c.Request = r.WithContext(ctx)
		m.inflight.Inc()

		c.Next()

		status := c.Writer.Status()
		elapsed := time.Since(start)
		m.inflight.Dec()
		m.requests.WithLabelValues(r.Method, route, strconv.Itoa(status)).Inc()
		m.duration.WithLabelValues(r.Method, route).Observe(elapsed.Seconds())
		sc := span.SpanContext()
		if span.IsRecording() {
			span.SetAttributes(attribute.Int("http.response.status_code", status), attribute.String("http.route", route))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
		}
		span.End()
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.String("path", r.URL.Path),
			slog.Int("status", status),
			slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
			slog.Int("bytes", max(c.Writer.Size(), 0)),
			slog.String("request_id", RequestID(c)),
		}
		if sc.HasTraceID() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
		}
		if org := c.GetString(OrgKey); org != "" {
			attrs = append(attrs, slog.String("org_id", org))
		}
		log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
	}
}

// OrgKey is the gin context key under which authentication records the
// caller's organisation, so access logs can name it.
const OrgKey = "quarters.org_id"

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
