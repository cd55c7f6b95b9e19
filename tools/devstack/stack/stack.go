// Package stack starts the whole Quarters dev stack in-process: the embedded
// store, Kafka, Redis and SMTP sink, every service that exists as its own
// process, and the local ingress in front of them. `make run` and end-to-end
// tests both go through Start.
package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"quarters.dev/pkg/routes"
	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/demo"
	"quarters.dev/tools/devstack/embedded"
	"quarters.dev/tools/devstack/ingress"
	"quarters.dev/tools/devstack/redisdev"
	"quarters.dev/tools/devstack/services"
	"quarters.dev/tools/devstack/smtpsink"
)

// SMTPSinkService is the routing table's name for the in-process SMTP sink.
const SMTPSinkService = "smtp-sink"

// Config is the dev stack's configuration (from the environment) plus what
// tests and tools may override.
type Config struct {
	config.Config

	// Root is the repository root (holding go.work); empty means walking up
	// from the working directory.
	Root string
	// Services overrides discovery: when non-nil exactly these run (specs
	// with a Binary are not built). Nil means every service of the routing
	// table that has services/<name>/main.go, built from source.
	Services []services.Spec
	// Output receives progress and crash reports; nil means os.Stdout.
	Output io.Writer
	// DemoSteps seed the demo org; nil means demo.DefaultSteps().
	DemoSteps []demo.Step
	// RedisBinary is the redis-server to run: empty looks it up on PATH,
	// "-" uses the embedded Redis.
	RedisBinary string
	// ReadyTimeout bounds how long Start waits for each service's /readyz;
	// zero means 90 seconds.
	ReadyTimeout time.Duration
	// StopGrace is how long services may drain after SIGTERM; zero means 25
	// seconds.
	StopGrace time.Duration
}

// Stack is a running dev stack.
type Stack struct {
	// IngressURL is the ingress root, e.g. http://127.0.0.1:8080.
	IngressURL string
	// BaseURL is the public API base, IngressURL + "/api/v1".
	BaseURL string
	// AdminURL is the admin API base, IngressURL + "/admin/v1".
	AdminURL string
	// DataDir is the absolute data directory.
	DataDir    string
	AdminToken string

	MongoURI     string
	RedisURL     string
	RedisKind    string
	KafkaBrokers []string
	SMTPAddr     string

	// Demo holds the demo org's credentials; nil when seeding is off or the
	// auth service is not running.
	Demo *demo.State

	console  *services.Console
	lock     *os.File
	ingress  *ingress.Ingress
	server   *http.Server
	served   chan struct{}
	sink     *smtpsink.Sink
	mongo    *embedded.Mongo
	kafka    *embedded.Kafka
	redis    *redisdev.Redis
	sup      *services.Supervisor
	logs     []*os.File
	started  atomic.Bool
	mu       sync.Mutex
	pending  []string
	stopOnce sync.Once
	grace    time.Duration
}

// Start brings the dev stack up and returns once every started service is
// ready (or has failed, which is reported), the demo org is seeded, and the
// ready line is printed. On error everything already started is stopped.
func Start(ctx context.Context, cfg Config) (st *Stack, err error) {
	out := cfg.Output
	if out == nil {
		out = os.Stdout
	}
	s := &Stack{console: services.NewConsole(out), AdminToken: cfg.AdminToken, grace: cfg.StopGrace, served: make(chan struct{})}
	if s.grace <= 0 {
		s.grace = 25 * time.Second
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if cfg.Listen == "" || cfg.DataDir == "" || cfg.AdminToken == "" {
		def := config.Defaults()
		cfg.Listen = orDefault(cfg.Listen, def.Listen)
		cfg.DataDir = orDefault(cfg.DataDir, def.DataDir)
		cfg.AdminToken = orDefault(cfg.AdminToken, def.AdminToken)
		s.AdminToken = cfg.AdminToken
	}
	if s.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	// Keep the data dir out of version control wherever it is created.
	if err := os.WriteFile(filepath.Join(s.DataDir, ".gitignore"), []byte("*\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write data dir .gitignore: %w", err)
	}
	if err := s.lockDataDir(); err != nil {
		return nil, err
	}

	table, err := routes.Default(true)
	if err != nil {
		return nil, err
	}

	// The ingress listens first: its address is every service's public URL.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("QUARTERS_LISTEN=%s: %w", cfg.Listen, err)
	}
	s.IngressURL = "http://" + publicAddr(ln.Addr().(*net.TCPAddr))
	s.BaseURL = s.IngressURL + "/api/v1"
	s.AdminURL = s.IngressURL + "/admin/v1"

	if s.sink, err = smtpsink.Start(filepath.Join(s.DataDir, "smtp"), "", cfg.AdminToken); err != nil {
		ln.Close()
		return nil, err
	}
	s.SMTPAddr = s.sink.Addr
	s.sink.OrgExists = s.orgExists
	s.sup = &services.Supervisor{LogDir: filepath.Join(s.DataDir, "logs"), Console: s.console}
	if err := os.MkdirAll(s.sup.LogDir, 0o755); err != nil {
		ln.Close()
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	ingressLog, err := os.OpenFile(filepath.Join(s.sup.LogDir, "ingress.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("open ingress log: %w", err)
	}
	s.logs = append(s.logs, ingressLog)
	s.ingress = ingress.New(table, ingress.Options{
		Ready: s.Ready,
		Local: map[string]http.Handler{SMTPSinkService: s.sink.Handler()},
	})
	s.sup.OnExit = func(p *services.Process) { s.ingress.SetUpstream(p.Name, "") }
	s.server = s.ingress.Server(log.New(ingressLog, "", log.LstdFlags))
	go func() {
		defer close(s.served)
		s.server.Serve(ln)
	}()
	s.console.Printf("ingress listening on %s", s.IngressURL)

	if err := s.startDependencies(ctx, cfg); err != nil {
		return nil, err
	}

	specs := cfg.Services
	root := cfg.Root
	if specs == nil || needsBuild(specs) {
		if root == "" {
			wd, _ := os.Getwd()
			if root, err = services.FindRoot(wd); err != nil {
				return nil, err
			}
		}
	}
	if specs == nil {
		var names []string
		for _, n := range table.Services() {
			if n != SMTPSinkService {
				names = append(names, n)
			}
		}
		specs = services.Discover(root, names)
		var missing []string
		for _, n := range names {
			if !hasSpec(specs, n) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			s.console.Printf("not written yet, so not started: %s", strings.Join(missing, ", "))
		}
	}
	s.setPending(specs)
	wanted := specs
	if needsBuild(specs) {
		specs = services.Build(ctx, root, filepath.Join(s.DataDir, "bin"), specs, s.console)
	}
	s.setPending(specs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	env := []string{
		"QUARTERS_MONGO_URI=" + s.MongoURI,
		"QUARTERS_REDIS_URL=" + s.RedisURL,
		"QUARTERS_KAFKA_BROKERS=" + strings.Join(s.KafkaBrokers, ","),
		"QUARTERS_ADMIN_TOKEN=" + cfg.AdminToken,
		"QUARTERS_WEBHOOK_ALLOW_HTTP=" + fmt.Sprint(cfg.WebhookAllowHTTP),
		"QUARTERS_WEBHOOK_ALLOW_PRIVATE=" + fmt.Sprint(cfg.WebhookAllowPrivate),
		"QUARTERS_SMTP_ADDR=" + s.SMTPAddr,
		"QUARTERS_SMTP_URL=smtp://" + s.SMTPAddr,
		"QUARTERS_DASHBOARD_URL=" + s.IngressURL + "/dashboard",
		"QUARTERS_PUBLIC_URL=" + s.IngressURL,
	}
	var procs []*services.Process
	for _, spec := range specs {
		p, err := s.sup.Start(spec, env)
		if err != nil {
			s.console.Printf("%v", err)
			continue
		}
		s.console.Printf("started %s (api %s, ops %s, log %s)", p.Name, p.APIAddr, p.OpsAddr, s.rel(p.LogPath))
		procs = append(procs, p)
	}
	readyTimeout := cfg.ReadyTimeout
	if readyTimeout <= 0 {
		readyTimeout = 90 * time.Second
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() {
			wctx, cancel := context.WithTimeout(ctx, readyTimeout)
			defer cancel()
			err := p.WaitReady(wctx)
			switch {
			case err == nil:
				s.ingress.SetUpstream(p.Name, p.APIAddr)
				s.console.Printf("%s ready", p.Name)
			case p.Exited():
				// The supervisor has reported the exit with its log tail.
			default:
				// Running but not ready: route to it anyway, so its own
				// answers explain what it is waiting for.
				s.ingress.SetUpstream(p.Name, p.APIAddr)
				s.console.Printf("%s is running but not ready after %s; see %s", p.Name, readyTimeout, s.rel(p.LogPath))
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	s.started.Store(true)
	s.seedDemo(ctx, cfg, procs)
	if down := notRunning(wanted, procs); len(down) > 0 {
		s.console.Printf("not running (see above): %s", strings.Join(down, ", "))
	}
	s.console.Printf("quarters ready: api %s  admin %s  data %s", s.BaseURL, s.AdminURL, s.rel(s.DataDir))
	return s, nil
}

func (s *Stack) startDependencies(ctx context.Context, cfg Config) error {
	var err error
	ferretLog, lerr := os.OpenFile(filepath.Join(s.sup.LogDir, "ferretdb.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if lerr != nil {
		return fmt.Errorf("open FerretDB log: %w", lerr)
	}
	s.logs = append(s.logs, ferretLog)
	logger := slog.New(slog.NewJSONHandler(ferretLog, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if s.mongo, err = embedded.StartMongo(ctx, filepath.Join(s.DataDir, "mongo"), "", logger); err != nil {
		return err
	}
	s.MongoURI = s.mongo.URI
	s.console.Printf("store: embedded FerretDB at %s (files in %s)", s.mongo.Addr, s.rel(filepath.Join(s.DataDir, "mongo")))

	if s.kafka, err = embedded.StartKafka("", filepath.Join(s.DataDir, "kafka")); err != nil {
		return err
	}
	s.KafkaBrokers = s.kafka.Brokers
	s.console.Printf("kafka: embedded broker at %s (log in %s)", strings.Join(s.KafkaBrokers, ","), s.rel(filepath.Join(s.DataDir, "kafka")))

	if s.redis, err = redisdev.Start(ctx, redisdev.Options{URL: cfg.RedisURL, Dir: filepath.Join(s.DataDir, "redis"), Binary: cfg.RedisBinary}); err != nil {
		return err
	}
	s.RedisURL, s.RedisKind = s.redis.ServiceURL(), s.redis.Kind
	if s.redis.Socket != "" {
		s.console.Printf("redis: %s (%s; the services connect through %s)", s.redis.URL, s.RedisKind, s.rel(s.redis.Socket))
	} else {
		s.console.Printf("redis: %s (%s)", s.RedisURL, s.RedisKind)
	}
	s.console.Printf("smtp: sink at %s (messages in %s)", s.SMTPAddr, s.rel(filepath.Join(s.DataDir, "smtp")))
	return nil
}

func (s *Stack) seedDemo(ctx context.Context, cfg Config, procs []*services.Process) {
	file := filepath.Join(s.DataDir, "demo.json")
	st, found, err := demo.Load(file)
	if err != nil {
		s.console.Printf("demo: %v", err)
		return
	}
	if found {
		s.Demo = st
		s.printDemo()
		return
	}
	if !cfg.Demo {
		return
	}
	running := map[string]bool{}
	for _, p := range procs {
		if !p.Exited() {
			running[p.Name] = true
		}
	}
	if !running["auth"] {
		s.console.Printf("demo: not seeded, the auth service is not running")
		return
	}
	steps := cfg.DemoSteps
	if steps == nil {
		steps = demo.StepsFor(running)
	}
	st, err = demo.Seed(ctx, &demo.Client{AdminURL: s.AdminURL, Token: cfg.AdminToken}, steps, file)
	if err != nil {
		s.console.Printf("%v (the next start tries again)", err)
		return
	}
	s.Demo = st
	s.printDemo()
}

func (s *Stack) printDemo() {
	var b strings.Builder
	s.Demo.Print(&b, s.BaseURL)
	s.console.Printf("%s", strings.TrimRight(b.String(), "\n"))
}

// Ready reports every started service's readiness, checked now; it backs
// the ingress's /readyz.
func (s *Stack) Ready(ctx context.Context) (bool, map[string]string) {
	procs := s.sup.Processes()
	states := make([]string, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { states[i] = p.State(ctx) })
	}
	wg.Wait()
	out := map[string]string{SMTPSinkService: services.Ready}
	// Until Start has started every service, the ones still being built
	// count as starting.
	ready := s.started.Load()
	if !ready {
		s.mu.Lock()
		for _, name := range s.pending {
			out[name] = services.Starting
		}
		s.mu.Unlock()
	}
	for i, p := range procs {
		out[p.Name] = states[i]
		if states[i] != services.Ready {
			ready = false
		}
	}
	return ready, out
}

func (s *Stack) setPending(specs []services.Spec) {
	names := make([]string, len(specs))
	for i, sp := range specs {
		names[i] = sp.Name
	}
	s.mu.Lock()
	s.pending = names
	s.mu.Unlock()
}

// Processes returns the service processes the stack started.
func (s *Stack) Processes() []*services.Process { return s.sup.Processes() }

// Stop stops the services (SIGTERM, then a grace period), then the ingress,
// Redis, Kafka, the store and the SMTP sink. It is safe to call more than
// once.
func (s *Stack) Stop() {
	s.stopOnce.Do(func() {
		if s.server != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			s.server.Shutdown(ctx)
			cancel()
			s.server.Close()
			<-s.served
		}
		if s.sup != nil {
			s.sup.Stop(s.grace)
		}
		if s.ingress != nil {
			s.ingress.Close()
		}
		if s.redis != nil {
			s.redis.Stop()
		}
		if s.kafka != nil {
			s.kafka.Stop()
		}
		if s.mongo != nil {
			s.mongo.Stop()
		}
		if s.sink != nil {
			s.sink.Stop()
		}
		for _, f := range s.logs {
			f.Close()
		}
		if s.lock != nil {
			syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
			s.lock.Close()
		}
	})
}

// lockDataDir makes sure one dev stack at a time uses a data dir.
func (s *Stack) lockDataDir() error {
	f, err := os.OpenFile(filepath.Join(s.DataDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("another dev stack is using %s: stop it first or set QUARTERS_DATA_DIR", s.DataDir)
		}
		return fmt.Errorf("lock data dir: %w", err)
	}
	s.lock = f
	return nil
}

// rel shortens a path below the working directory for printing.
func (s *Stack) rel(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// publicAddr is the address clients use to reach a listener: loopback when
// it listens on every interface.
func publicAddr(a *net.TCPAddr) string {
	ip := a.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(a.Port))
}

// notRunning names the wanted services that failed to build or start, or
// have exited.
func notRunning(wanted []services.Spec, procs []*services.Process) []string {
	var out []string
	for _, w := range wanted {
		up := false
		for _, p := range procs {
			if p.Name == w.Name && !p.Exited() {
				up = true
			}
		}
		if !up {
			out = append(out, w.Name)
		}
	}
	return out
}

func needsBuild(specs []services.Spec) bool {
	for _, s := range specs {
		if s.Binary == "" {
			return true
		}
	}
	return false
}

func hasSpec(specs []services.Spec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// orgExists asks the auth service, through the ingress, whether an
// organisation exists.
func (s *Stack) orgExists(ctx context.Context, orgID string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.AdminURL+"/orgs/"+url.PathEscape(orgID), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	switch res.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("auth answered %s", res.Status)
}
