// Package bootstrap starts a service process: typed configuration, one JSON
// logger, one Prometheus registry, one tracer, the API server and the ops
// server (/healthz, /readyz, /metrics), background workers run as a group,
// and a graceful stop on SIGTERM or SIGINT within a deadline. Every service's
// main is one call to Main.
package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"quarters.dev/pkg/coalesce"
	"quarters.dev/pkg/config"
	"quarters.dev/pkg/httpx"
	"quarters.dev/pkg/jsonresp"
)

// Base is the configuration every service shares.
type Base struct {
	HTTPAddr        string        `env:"QUARTERS_HTTP_ADDR" default:":8080"`
	OpsAddr         string        `env:"QUARTERS_OPS_ADDR" default:":9090"`
	LogLevel        string        `env:"QUARTERS_LOG_LEVEL" default:"info"`
	OTLPEndpoint    string        `env:"QUARTERS_OTLP_ENDPOINT"`
	ShutdownTimeout time.Duration `env:"QUARTERS_SHUTDOWN_TIMEOUT" default:"20s"`
	MaxBodyBytes    int64         `env:"QUARTERS_MAX_BODY_BYTES" default:"1048576"`
}

// Runtime is what a service builds itself with.
type Runtime struct {
	Name     string
	Base     Base
	Log      *slog.Logger
	Registry *prometheus.Registry
	Tracer   trace.TracerProvider
	// AccessLog receives the access log lines (nil: none), next to Log's.
	AccessLog io.Writer
}

// HTTP returns a gin engine with the shared behaviour of pkg/httpx, wired to
// this process's logger, registry and tracer. limits raises or lowers the body
// limit of single routes ("METHOD /route/:template" to bytes).
func (rt *Runtime) HTTP(limits map[string]int64) *gin.Engine {
	return httpx.New(httpx.Options{
		Log:          rt.Log,
		Registry:     rt.Registry,
		Tracer:       rt.Tracer,
		MaxBodyBytes: rt.Base.MaxBodyBytes,
		BodyLimits:   limits,
		AccessLog:    rt.AccessLog,
		Service:      rt.Name,
	})
}

// App is a built service.
type App struct {
	// API serves the public and admin routes.
	API http.Handler
	// Ready holds the readiness checks of the service's dependencies.
	Ready map[string]func(context.Context) error
	// Workers run until their context ends (outbox relays, consumers). A
	// worker that returns early with an error stops the process.
	Workers []func(context.Context) error
	// Closers run after the API has drained and the workers have stopped,
	// in order (disconnect stores, flush exporters).
	Closers []func(context.Context) error
}

// Main runs the service and exits the process. cfg, when not nil, is a
// pointer to the service's own config struct, loaded from the environment
// together with Base so that every configuration problem is reported at once.
func Main(name string, cfg any, build func(ctx context.Context, rt *Runtime) (*App, error)) {
	os.Exit(Run(name, cfg, build))
}

// Run is Main without the exit: it returns the process exit code.
func Run(name string, cfg any, build func(ctx context.Context, rt *Runtime) (*App, error)) int {
	var base Base
	errs := []error{config.Load(&base)}
	if cfg != nil {
		errs = append(errs, config.Load(cfg))
	}
	level, lerr := parseLevel(base.LogLevel)
	errs = append(errs, lerr)
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "quarters %s: invalid configuration:\n  %s\n", name,
			strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	logOut := newLogBuffer(os.Stderr)
	defer logOut.Close()
	// Only the access log is batched; the process's own lines are written
	// at once.
	log := slog.New(slog.NewJSONHandler(writeThrough{logOut}, &slog.HandlerOptions{Level: level})).With("service", name)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	tp, shutdownTracer, err := newTracer(ctx, name, base.OTLPEndpoint)
	if err != nil {
		log.Error("start tracing", "error", err)
		return 1
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTracer(c)
	}()
	rt := &Runtime{Name: name, Base: base, Log: log, Registry: reg, Tracer: tp}
	if level <= slog.LevelInfo {
		rt.AccessLog = logOut
	}

	// The ops server comes up first, so that liveness holds while the
	// service connects, and readiness answers 503 until it is built.
	ops := &opsServer{log: log}
	opsSrv, err := serve(base.OpsAddr, ops.handler(reg), log, "ops", false)
	if err != nil {
		log.Error("start ops server", "addr", base.OpsAddr, "error", err)
		return 1
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = opsSrv.Shutdown(c)
	}()

	buildCtx, cancelBuild := context.WithTimeout(ctx, 2*time.Minute)
	app, err := build(buildCtx, rt)
	cancelBuild()
	if err != nil {
		log.Error("start service", "error", err)
		return 1
	}
	closeAll := func() {
		c, cancel := context.WithTimeout(context.Background(), base.ShutdownTimeout)
		defer cancel()
		for _, f := range app.Closers {
			if err := f(c); err != nil {
				log.Warn("close", "error", err)
			}
		}
	}

	apiSrv, err := serve(base.HTTPAddr, app.API, log, "api", true)
	if err != nil {
		log.Error("start API server", "addr", base.HTTPAddr, "error", err)
		closeAll()
		return 1
	}

	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	failed := make(chan error, len(app.Workers))
	for _, w := range app.Workers {
		wg.Go(func() {
			if err := w(workCtx); err != nil && workCtx.Err() == nil {
				failed <- err
			}
		})
	}
	ops.setReady(app.Ready)
	log.Info("service started", "api", base.HTTPAddr, "ops", base.OpsAddr)

	code := 0
	select {
	case <-ctx.Done():
		log.Info("stopping", "reason", "signal")
	case err := <-failed:
		log.Error("worker failed; stopping", "error", err)
		code = 1
	case err := <-apiSrv.failed:
		log.Error("API server failed; stopping", "error", err)
		code = 1
	}

	// Drain: stop answering ready, finish in-flight requests, stop workers
	// (relays flush, consumers commit), then close the stores.
	ops.setReady(nil)
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), base.ShutdownTimeout)
	defer cancelDrain()
	if err := apiSrv.Shutdown(drainCtx); err != nil {
		log.Warn("API drain incomplete", "error", err)
	}
	cancelWork()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-drainCtx.Done():
		log.Warn("workers did not stop within the shutdown timeout")
	}
	closeAll()
	log.Info("stopped")
	return code
}

type server struct {
	*http.Server
	failed chan error
}

func serve(addr string, h http.Handler, log *slog.Logger, name string, coalesced bool) (*server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if coalesced {
		l = coalesce.Listen(l)
	}
	s := &server{
		Server: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       2 * time.Minute,
			WriteTimeout:      2 * time.Minute,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(log.With("server", name).Handler(), slog.LevelWarn),
		},
		failed: make(chan error, 1),
	}
	go func() {
		if err := s.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.failed <- err
		}
	}()
	return s, nil
}

type opsServer struct {
	log    *slog.Logger
	checks atomic.Pointer[map[string]func(context.Context) error]
}

func (o *opsServer) setReady(checks map[string]func(context.Context) error) {
	if checks == nil {
		o.checks.Store(nil)
		return
	}
	o.checks.Store(&checks)
}

func (o *opsServer) handler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		jsonresp.Write(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", o.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Profiles, on the ops port only (never on the API port).
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

func (o *opsServer) readyz(w http.ResponseWriter, r *http.Request) {
	p := o.checks.Load()
	if p == nil {
		jsonresp.Write(w, http.StatusServiceUnavailable, map[string]any{"status": "starting"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	results := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok := true
	for name, check := range *p {
		wg.Go(func() {
			err := check(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				ok = false
				results[name] = err.Error()
				return
			}
			results[name] = "ok"
		})
	}
	wg.Wait()
	if !ok {
		o.log.Warn("not ready", "checks", results)
		jsonresp.Write(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": results})
		return
	}
	jsonresp.Write(w, http.StatusOK, map[string]any{"status": "ready", "checks": results})
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("config: QUARTERS_LOG_LEVEL: must be debug, info, warn or error, got %q", s)
	}
	return l, nil
}

func newTracer(ctx context.Context, name, endpoint string) (trace.TracerProvider, func(context.Context) error, error) {
	if endpoint == "" {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure())
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP exporter for %s: %w", endpoint, err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("quarters-"+name))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
