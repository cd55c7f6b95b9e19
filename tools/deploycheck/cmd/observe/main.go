// Command observe is `make observe`: the dev stack (as `make run` starts it)
// and a real Prometheus scraping every service's ops port with the alert
// rules of deploy/observability loaded. Ctrl-C stops both.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"quarters.dev/tools/deploycheck"
	"quarters.dev/tools/deploycheck/observe"
	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/stack"
)

func main() { os.Exit(run()) }

func run() int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "observe: %v\n", err)
		return 2
	}
	listen := os.Getenv("QUARTERS_PROMETHEUS_LISTEN")
	if listen == "" {
		listen = "127.0.0.1:9091"
	}
	root, err := deploycheck.Root()
	if err != nil {
		fmt.Fprintf(os.Stderr, "observe: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := stack.Start(ctx, stack.Config{Config: cfg, Root: root})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "observe: %v\n", err)
		return 1
	}
	defer s.Stop()
	var targets []observe.Target
	for _, p := range s.Processes() {
		targets = append(targets, observe.Target{Service: p.Name, Addr: p.OpsAddr})
	}
	logPath := filepath.Join(s.DataDir, "logs", "prometheus.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "observe: %v\n", err)
		return 1
	}
	defer logFile.Close()
	prom, err := observe.Start(ctx, targets, observe.Options{
		Dir:       filepath.Join(s.DataDir, "prometheus"),
		Listen:    listen,
		RulesFile: filepath.Join(root, deploycheck.ObservabilityDir, "quarters-alerts.yaml"),
		Output:    logFile,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "observe: %v (log in %s)\n", err, logPath)
		return 1
	}
	fmt.Printf("prometheus: %s (targets %s/targets, alerts %s/alerts; log %s)\n", prom.URL, prom.URL, prom.URL, logPath)
	fmt.Println("Ctrl-C stops Prometheus and the dev stack")
	select {
	case <-ctx.Done():
	case err := <-waitErr(prom):
		fmt.Fprintf(os.Stderr, "prometheus exited: %v (log in %s)\n", err, logPath)
	}
	stop()
	fmt.Println("stopping Prometheus, then the dev stack")
	prom.Stop()
	return 0
}

func waitErr(p *observe.Prometheus) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- p.Wait() }()
	return ch
}
