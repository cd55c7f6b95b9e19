// Package services builds the Quarters service binaries and runs each as its
// own process, watching readiness and reporting a process that exits. A
// service that exits is never restarted: the developer sees why it stopped.
package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"quarters.dev/tools/devstack/freeport"
)

// Spec says how to get and run one service.
type Spec struct {
	Name string
	// Package is the directory to build, relative to the repository root
	// (./services/<name>). Ignored when Binary is set.
	Package string
	// Binary is a prebuilt executable; Build fills it in.
	Binary string
	// Env is added to this service's environment after everything else.
	Env []string
}

// Discover returns a Spec for every name that has services/<name>/main.go
// under root, in the order of names.
func Discover(root string, names []string) []Spec {
	var out []Spec
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(root, "services", n, "main.go")); err == nil {
			out = append(out, Spec{Name: n, Package: "./services/" + n})
		}
	}
	return out
}

// FindRoot walks up from dir to the directory holding go.work.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work found in this directory or above: run from inside the Quarters repository")
		}
		dir = parent
	}
}

// Build compiles every spec without a Binary into binDir, all in parallel,
// printing progress to out. It returns the specs that are ready to run; a
// failed build is printed with the compiler's output and left out.
func Build(ctx context.Context, root, binDir string, specs []Spec, out *Console) []Spec {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		out.Printf("cannot create %s: %v", binDir, err)
		return nil
	}
	built := make([]Spec, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		if s.Binary != "" {
			built[i] = s
			continue
		}
		wg.Go(func() {
			start := time.Now()
			out.Printf("building %s", s.Name)
			bin := filepath.Join(binDir, s.Name)
			cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, s.Package)
			cmd.Dir = root
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			if err := cmd.Run(); err != nil {
				out.Printf("build of %s failed (%v); it will not be started:\n%s", s.Name, err, indent(buf.String()))
				return
			}
			out.Printf("built %s in %.1fs", s.Name, time.Since(start).Seconds())
			s.Binary = bin
			built[i] = s
		})
	}
	wg.Wait()
	var ok []Spec
	for _, s := range built {
		if s.Binary != "" {
			ok = append(ok, s)
		}
	}
	return ok
}

// Console serialises progress lines from concurrent work.
type Console struct {
	mu sync.Mutex
	w  io.Writer
}

// NewConsole writes to w.
func NewConsole(w io.Writer) *Console { return &Console{w: w} }

// Printf prints one message followed by a newline.
func (c *Console) Printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, format+"\n", args...)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// State of a process as /readyz reports it.
const (
	Starting = "starting"
	Ready    = "ready"
	NotReady = "not_ready"
	Exited   = "exited"
)

// Process is one running service.
type Process struct {
	Name    string
	APIAddr string
	OpsAddr string
	LogPath string

	cmd      *exec.Cmd
	log      *os.File
	done     chan struct{}
	exitErr  error
	wasReady atomic.Bool
	stopping atomic.Bool
}

// Supervisor runs service processes.
type Supervisor struct {
	LogDir  string
	Console *Console
	// OnExit is called when a process exits on its own (not during Stop),
	// after the exit has been reported.
	OnExit func(*Process)
	// TailLines is how much of a crashed service's log is printed.
	TailLines int

	mu    sync.Mutex
	procs []*Process
}

var client = &http.Client{Timeout: 2 * time.Second}

// Start runs spec.Binary with the parent's environment, then env, then
// spec.Env, plus QUARTERS_HTTP_ADDR and QUARTERS_OPS_ADDR on free ports. Its
// output goes to LogDir/<name>.log.
func (s *Supervisor) Start(spec Spec, env []string) (*Process, error) {
	api, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	ops, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	p := &Process{Name: spec.Name, APIAddr: api, OpsAddr: ops, LogPath: filepath.Join(s.LogDir, spec.Name+".log"), done: make(chan struct{})}
	p.log, err = os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p.LogPath, err)
	}
	fmt.Fprintf(p.log, "--- dev stack started %s at %s (api %s, ops %s)\n", spec.Name, time.Now().UTC().Format(time.RFC3339), api, ops)
	cmd := exec.Command(spec.Binary)
	cmd.Env = append(append(append(os.Environ(), env...), spec.Env...),
		"QUARTERS_HTTP_ADDR="+api, "QUARTERS_OPS_ADDR="+ops)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// Own process group: a Ctrl-C in the terminal reaches the dev stack
	// only, which then stops the services in order. Pdeathsig stops them if
	// the dev stack itself is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		p.log.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p.cmd = cmd
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	go s.wait(p)
	return p, nil
}

func (s *Supervisor) wait(p *Process) {
	p.exitErr = p.cmd.Wait()
	p.log.Close()
	// The exit is reported and routed around before Done closes, so
	// whoever waits on Done sees a consistent stack.
	defer close(p.done)
	if p.stopping.Load() {
		return
	}
	status := "exit status 0"
	if p.exitErr != nil {
		status = p.exitErr.Error()
	}
	n := s.TailLines
	if n <= 0 {
		n = 40
	}
	tail, _ := Tail(p.LogPath, n)
	s.Console.Printf("service %s exited (%s); it will not be restarted. Last lines of %s:\n%s", p.Name, status, p.LogPath, indent(tail))
	if s.OnExit != nil {
		s.OnExit(p)
	}
}

// Processes returns the processes started so far.
func (s *Supervisor) Processes() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Process(nil), s.procs...)
}

// Stop sends SIGTERM to every process, waits up to grace for them to drain,
// then kills what is left.
func (s *Supervisor) Stop(grace time.Duration) {
	procs := s.Processes()
	for _, p := range procs {
		p.stopping.Store(true)
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	timeout := time.After(grace)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-timeout:
			for _, q := range procs {
				q.cmd.Process.Kill()
			}
			<-p.done
		}
	}
	for _, p := range procs {
		<-p.done
	}
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process ends.
func (p *Process) Done() <-chan struct{} { return p.done }

// State checks the process's /readyz now.
func (p *Process) State(ctx context.Context) string {
	if p.Exited() {
		return Exited
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.OpsAddr+"/readyz", nil)
	res, err := client.Do(req)
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			p.wasReady.Store(true)
			return Ready
		}
	}
	if p.Exited() {
		return Exited
	}
	if p.wasReady.Load() {
		return NotReady
	}
	return Starting
}

// WaitReady polls /readyz until it answers 200, the process exits, or ctx
// ends.
func (p *Process) WaitReady(ctx context.Context) error {
	for {
		switch p.State(ctx) {
		case Ready:
			return nil
		case Exited:
			return fmt.Errorf("%s exited before it was ready", p.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready in time: %w", p.Name, ctx.Err())
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Tail returns the last n lines of the file at path.
func Tail(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	const window = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(st.Size()-window, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if off > 0 && len(lines) > 0 {
		lines = lines[1:] // the first line is cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n"), nil
}
