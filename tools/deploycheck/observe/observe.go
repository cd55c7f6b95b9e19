// Package observe runs a real Prometheus against the dev stack (`make
// observe`): it scrapes every service's ops port, labelled with the service's
// name as the chart's ServiceMonitor labels it, and loads the alert rules of
// deploy/observability.
package observe

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// Target is one service's ops address (host:port).
type Target struct {
	Service string
	Addr    string
}

// Config returns a Prometheus configuration that scrapes the targets every
// interval and loads rulesFile.
func Config(targets []Target, rulesFile string, interval time.Duration) ([]byte, error) {
	sorted := append([]Target(nil), targets...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Service < sorted[j].Service })
	var statics []map[string]any
	for _, t := range sorted {
		statics = append(statics, map[string]any{
			"targets": []string{t.Addr},
			"labels":  map[string]string{"service": t.Service},
		})
	}
	cfg := map[string]any{
		"global": map[string]any{
			"scrape_interval":     interval.String(),
			"evaluation_interval": interval.String(),
		},
		"rule_files": []string{rulesFile},
		"scrape_configs": []any{map[string]any{
			"job_name":       "quarters",
			"metrics_path":   "/metrics",
			"static_configs": statics,
		}},
	}
	return yaml.Marshal(cfg)
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	URL  string
	cmd  *exec.Cmd
	done chan error
}

// Options say where Prometheus keeps its files and listens.
type Options struct {
	// Binary is the prometheus executable; empty looks it up on PATH.
	Binary string
	// Dir holds prometheus.yml and the TSDB.
	Dir string
	// Listen is the web address (host:port).
	Listen string
	// RulesFile is the alert rules file to load.
	RulesFile string
	// Interval is the scrape and rule evaluation interval.
	Interval time.Duration
	// Output receives Prometheus's log.
	Output io.Writer
}

// Start writes the configuration and starts Prometheus; it returns once
// Prometheus answers /-/ready.
func Start(ctx context.Context, targets []Target, o Options) (*Prometheus, error) {
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("prometheus"); err != nil {
			return nil, fmt.Errorf("prometheus is not installed (Debian: apt-get install prometheus): %w", err)
		}
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	rules, err := filepath.Abs(o.RulesFile)
	if err != nil {
		return nil, err
	}
	cfg, err := Config(targets, rules, o.Interval)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "data"), 0o755); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(o.Dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(o.Dir, "data"),
		"--web.listen-address="+o.Listen,
		"--storage.tsdb.retention.time=2d",
	)
	cmd.Stdout, cmd.Stderr = o.Output, o.Output
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Prometheus{URL: "http://" + o.Listen, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	for {
		if ready(ctx, p.URL+"/-/ready") {
			return p, nil
		}
		select {
		case err := <-p.done:
			p.done <- err
			return nil, fmt.Errorf("prometheus exited: %v", err)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Wait returns once Prometheus has exited, with its exit error.
func (p *Prometheus) Wait() error {
	err := <-p.done
	p.done <- err
	return err
}

// Stop terminates Prometheus and waits for it.
func (p *Prometheus) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
