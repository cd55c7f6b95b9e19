// Command devstack runs the whole Quarters product on one machine (`make
// run`): embedded MongoDB-compatible store, Kafka, Redis and SMTP sink, every
// service as its own process, and the local ingress. Ctrl-C stops it all;
// the data stays for the next run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/stack"
)

func main() {
	os.Exit(run())
}

func run() int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack: invalid configuration:\n  %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := stack.Start(ctx, stack.Config{Config: cfg})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Println("stopped before the stack was ready")
			return 0
		}
		fmt.Fprintf(os.Stderr, "devstack: %v\n", err)
		return 1
	}
	<-ctx.Done()
	stop()
	fmt.Println("stopping: services first, then Redis, Kafka and the store (Ctrl-C again to force)")
	// A second signal during shutdown ends the process at once; Pdeathsig
	// takes the services with it.
	force := make(chan os.Signal, 1)
	signal.Notify(force, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-force
		fmt.Fprintln(os.Stderr, "forced exit")
		os.Exit(130)
	}()
	s.Stop()
	fmt.Println("stopped; data kept in " + cfg.DataDir)
	return 0
}
