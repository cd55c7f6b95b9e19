// Package redisdev gives the dev stack a Redis: the one named by
// QUARTERS_REDIS_URL, else a redis-server from PATH with its files under the
// data dir, else an embedded miniredis (which runs Lua scripts too).
package redisdev

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Kinds of Redis the dev stack can use.
const (
	External = "external"
	Server   = "redis-server"
	Embedded = "embedded"
)

// Redis is the Redis the services use.
type Redis struct {
	// URL reaches it over TCP.
	URL string
	// Socket, when set, is the path of a Unix socket of the same server,
	// which the services on this machine use: a round trip through it costs
	// both ends less CPU than one through loopback TCP.
	Socket string
	Kind   string
	stop   func()
}

// ServiceURL is the URL the services should use.
func (r *Redis) ServiceURL() string {
	if r.Socket != "" {
		return "unix://" + r.Socket + "?db=0"
	}
	return r.URL
}

// maxSocketPath keeps a socket's path within sun_path (108 bytes on Linux,
// with its terminating NUL); a data dir deeper than that is served over TCP
// only.
const maxSocketPath = 100

// Options choose the Redis.
type Options struct {
	// URL, when set, is used as it is and nothing is started.
	URL string
	// Dir keeps redis-server's append-only file.
	Dir string
	// Binary is the redis-server to run; empty means looking it up on PATH,
	// and "-" means never starting one (embedded only).
	Binary string
}

// Start provides a Redis according to opts.
func Start(ctx context.Context, opts Options) (*Redis, error) {
	if opts.URL != "" {
		return &Redis{URL: opts.URL, Kind: External, stop: func() {}}, nil
	}
	bin := opts.Binary
	if bin == "" {
		bin, _ = exec.LookPath("redis-server")
	}
	if bin != "" && bin != "-" {
		return startServer(ctx, bin, opts.Dir)
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	return &Redis{URL: "redis://" + m.Addr() + "/0", Kind: Embedded, stop: m.Close}, nil
}

// Stop stops a Redis the dev stack started; an external one is left alone.
func (r *Redis) Stop() { r.stop() }

func startServer(ctx context.Context, bin, dir string) (*Redis, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create redis dir: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pick a port for redis: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	args := []string{"--port", port, "--bind", "127.0.0.1", "--dir", abs,
		"--appendonly", "yes", "--save", "", "--daemonize", "no",
		"--logfile", filepath.Join(abs, "redis.log")}
	socket := filepath.Join(abs, "redis.sock")
	if len(socket) > maxSocketPath {
		socket = ""
	} else {
		// A socket left by a server that was killed would stop this one.
		_ = os.Remove(socket)
		args = append(args, "--unixsocket", socket, "--unixsocketperm", "700")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(addr); err == nil {
			break
		} else if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING (see %s): %w", addr, filepath.Join(abs, "redis.log"), err)
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("redis-server exited at start-up (see %s): %v", filepath.Join(abs, "redis.log"), err)
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return &Redis{URL: "redis://" + addr + "/0", Socket: socket, Kind: Server, stop: stop}, nil
}

// ping checks that addr speaks RESP and has finished loading its data.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return errors.New(strings.TrimSpace(line))
	}
	return nil
}
