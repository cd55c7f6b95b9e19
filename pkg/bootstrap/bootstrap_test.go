package bootstrap

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRunServesOpsAndStopsGracefullyOnSIGTERM(t *testing.T) {
	api, ops := freeAddr(t), freeAddr(t)
	t.Setenv("QUARTERS_HTTP_ADDR", api)
	t.Setenv("QUARTERS_OPS_ADDR", ops)
	t.Setenv("QUARTERS_LOG_LEVEL", "error")
	var depUp atomic.Bool
	depUp.Store(true)
	var workerStopped, closed atomic.Bool
	type svcConfig struct {
		Greeting string `env:"QUARTERS_TEST_GREETING" default:"hello"`
	}
	var cfg svcConfig
	code := make(chan int, 1)
	go func() {
		code <- Run("test", &cfg, func(ctx context.Context, rt *Runtime) (*App, error) {
			e := rt.HTTP(nil)
			e.GET("/api/v1/hello", func(c *gin.Context) { c.String(200, cfg.Greeting) })
			return &App{
				API: e,
				Ready: map[string]func(context.Context) error{"dep": func(context.Context) error {
					if !depUp.Load() {
						return errors.New("dep down")
					}
					return nil
				}},
				Workers: []func(context.Context) error{func(ctx context.Context) error {
					<-ctx.Done()
					workerStopped.Store(true)
					return nil
				}},
				Closers: []func(context.Context) error{func(context.Context) error { closed.Store(true); return nil }},
			}, nil
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s, _ := get("http://" + ops + "/readyz"); s == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s, b := get("http://" + api + "/api/v1/hello"); s != 200 || b != "hello" {
		t.Fatalf("api: %d %q", s, b)
	}
	if s, b := get("http://" + ops + "/metrics"); s != 200 || !strings.Contains(b, `quarters_http_requests_total{code="200",method="GET",route="/api/v1/hello"} 1`) {
		t.Fatalf("metrics: %d %s", s, b)
	}
	depUp.Store(false)
	if s, b := get("http://" + ops + "/readyz"); s != 503 || !strings.Contains(b, "dep down") {
		t.Fatalf("readyz with a dependency down: %d %s", s, b)
	}
	if s, _ := get("http://" + ops + "/healthz"); s != 200 {
		t.Fatalf("healthz: %d", s)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit code %d", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop")
	}
	if !workerStopped.Load() || !closed.Load() {
		t.Fatalf("worker stopped %v, closed %v", workerStopped.Load(), closed.Load())
	}
}

func TestRunRefusesBadConfiguration(t *testing.T) {
	t.Setenv("QUARTERS_SHUTDOWN_TIMEOUT", "later")
	t.Setenv("QUARTERS_LOG_LEVEL", "loud")
	type svcConfig struct {
		URI string `env:"QUARTERS_MONGO_URI" required:"true"`
	}
	built := false
	code := Run("test", &svcConfig{}, func(context.Context, *Runtime) (*App, error) { built = true; return &App{}, nil })
	if code != 2 || built {
		t.Fatalf("code %d, built %v", code, built)
	}
}

func TestTracesAreExportedWhenAnEndpointIsSet(t *testing.T) {
	var exported atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			if b, _ := io.ReadAll(r.Body); len(b) > 0 {
				exported.Add(1)
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	api, ops := freeAddr(t), freeAddr(t)
	t.Setenv("QUARTERS_HTTP_ADDR", api)
	t.Setenv("QUARTERS_OPS_ADDR", ops)
	t.Setenv("QUARTERS_LOG_LEVEL", "error")
	t.Setenv("QUARTERS_OTLP_ENDPOINT", strings.TrimPrefix(collector.URL, "http://"))
	code := make(chan int, 1)
	go func() {
		code <- Run("traced", nil, func(ctx context.Context, rt *Runtime) (*App, error) {
			e := rt.HTTP(nil)
			e.GET("/api/v1/ping", func(c *gin.Context) { c.Status(204) })
			return &App{API: e}, nil
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s, _ := get("http://" + api + "/api/v1/ping"); s == 204 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never served")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if c := <-code; c != 0 {
		t.Fatalf("exit code %d", c)
	}
	// Stopping flushes the batch of spans to the collector.
	if exported.Load() == 0 {
		t.Fatal("no spans reached the OTLP endpoint")
	}
}
