// Command testdeps starts the stores that store-backed tests need — the
// embedded MongoDB-compatible store, the embedded Kafka broker and a Redis —
// once, exports their addresses as QUARTERS_TEST_MONGO_URI,
// QUARTERS_TEST_KAFKA and QUARTERS_TEST_REDIS_URL, runs the command it is
// given, stops the stores and exits with the command's status:
//
//	go run ./tools/devstack/cmd/testdeps -- go test ./services/auth/...
//
// Tests read the addresses through pkg/testenv, so neither pkg nor any service
// depends on the dev stack. A variable that is already set is kept, and its
// store is not started. Redis is QUARTERS_TEST_REDIS_URL, else the local one
// on 6379 when it answers, else redis-server from PATH, else an embedded one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"quarters.dev/tools/devstack/embedded"
	"quarters.dev/tools/devstack/redisdev"
)

const (
	envMongo = "QUARTERS_TEST_MONGO_URI"
	envKafka = "QUARTERS_TEST_KAFKA"
	envRedis = "QUARTERS_TEST_REDIS_URL"
)

func main() {
	os.Exit(run())
}

func run() int {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testdeps [-dir DIR] -- COMMAND [ARGS...]")
		flag.PrintDefaults()
	}
	dir := flag.String("dir", "", "where the stores keep their files (default: a temporary directory, removed at exit)")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		return 2
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "quarters-testdeps-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "testdeps: %v\n", err)
			return 1
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stop, err := start(ctx, *dir)
	defer stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testdeps: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "testdeps: %s=%s %s=%s %s=%s\n",
		envMongo, os.Getenv(envMongo), envKafka, os.Getenv(envKafka), envRedis, os.Getenv(envRedis))

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testdeps: %v\n", err)
		return 1
	}
	// An interrupt goes to the command (it is in our process group); wait
	// for it to finish so the stores outlive it.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "testdeps: %v\n", err)
		return 1
	}
	return 0
}

// start provides each store whose variable is unset and exports it; the
// returned function stops what was started.
func start(ctx context.Context, dir string) (func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if os.Getenv(envMongo) == "" {
		m, err := embedded.StartMongo(ctx, dir+"/mongo", "", nil)
		if err != nil {
			return stop, err
		}
		stops = append(stops, m.Stop)
		os.Setenv(envMongo, m.URI)
	}
	if os.Getenv(envKafka) == "" {
		k, err := embedded.StartKafka("", dir+"/kafka")
		if err != nil {
			return stop, err
		}
		stops = append(stops, k.Stop)
		os.Setenv(envKafka, strings.Join(k.Brokers, ","))
	}
	if os.Getenv(envRedis) == "" {
		if answers("127.0.0.1:6379") {
			os.Setenv(envRedis, "redis://127.0.0.1:6379/0")
		} else {
			r, err := redisdev.Start(ctx, redisdev.Options{Dir: dir + "/redis"})
			if err != nil {
				return stop, err
			}
			stops = append(stops, r.Stop)
			os.Setenv(envRedis, r.URL)
		}
	}
	return stop, nil
}

// answers reports whether a Redis answers PING on addr.
func answers(addr string) bool {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err() == nil
}
