package redisdev

import (
	"bufio"
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// roundTrip sends one RESP command and returns the first reply line.
func roundTrip(t *testing.T, redisURL string, args ...string) string {
	t.Helper()
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	network, addr := "tcp", u.Host
	if u.Scheme == "unix" {
		network, addr = "unix", u.Path
	}
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	b.WriteString("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	c.Write([]byte(b.String()))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(line, "$") && !strings.HasPrefix(line, "$-1") {
		line, _ = r.ReadString('\n')
	}
	return strings.TrimSpace(line)
}

func itoa(n int) string {
	const d = "0123456789"
	if n < 10 {
		return d[n : n+1]
	}
	return itoa(n/10) + d[n%10:n%10+1]
}

func TestEmbeddedRunsLua(t *testing.T) {
	t.Parallel()
	r, err := Start(context.Background(), Options{Binary: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if r.Kind != Embedded {
		t.Fatalf("kind %s", r.Kind)
	}
	if got := roundTrip(t, r.URL, "EVAL", "return redis.call('INCRBY', KEYS[1], ARGV[1])", "1", "k", "5"); got != ":5" {
		t.Fatalf("EVAL answered %q", got)
	}
}

// runServer starts a redis-server from PATH with its files in dir, or
// skips the test when there is none; the caller stops it.
func runServer(t *testing.T, dir string) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	r, err := Start(context.Background(), Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRedisServerKeepsDataAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "redis")
	r := runServer(t, dir)
	if r.Kind != Server {
		t.Fatalf("kind %s", r.Kind)
	}
	if got := roundTrip(t, r.URL, "SET", "greeting", "hello"); got != "+OK" {
		t.Fatalf("SET answered %q", got)
	}
	r.Stop()
	r = runServer(t, dir)
	defer r.Stop()
	if got := roundTrip(t, r.URL, "GET", "greeting"); got != "hello" {
		t.Fatalf("after restart GET answered %q", got)
	}
}

func TestExternalURLIsUsedAsIs(t *testing.T) {
	t.Parallel()
	r, err := Start(context.Background(), Options{URL: "redis://10.0.0.1:6379/2"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if r.URL != "redis://10.0.0.1:6379/2" || r.Kind != External {
		t.Fatalf("%+v", r)
	}
}

func TestRedisServerAnswersOnAnOwnerOnlySocket(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "redis")
	r := runServer(t, dir)
	defer r.Stop()
	if r.Socket != filepath.Join(dir, "redis.sock") || r.ServiceURL() != "unix://"+r.Socket+"?db=0" {
		t.Fatalf("socket %q, service URL %q", r.Socket, r.ServiceURL())
	}
	if fi, err := os.Stat(filepath.Join(dir, "redis.sock")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket: %v %v", fi.Mode(), err)
	}
	if got := roundTrip(t, r.ServiceURL(), "SET", "through", "socket"); got != "+OK" {
		t.Fatalf("SET answered %q", got)
	}
	if got := roundTrip(t, r.URL, "GET", "through"); got != "socket" {
		t.Fatalf("GET over TCP answered %q", got)
	}
}

func TestADeepDataDirIsServedOverTCPOnly(t *testing.T) {
	t.Parallel()
	r := runServer(t, filepath.Join(t.TempDir(), strings.Repeat("d", maxSocketPath), "redis"))
	defer r.Stop()
	if r.Socket != "" || r.ServiceURL() != r.URL {
		t.Fatalf("socket %q, service URL %q", r.Socket, r.ServiceURL())
	}
	if got := roundTrip(t, r.ServiceURL(), "PING"); got != "+PONG" {
		t.Fatalf("PING answered %q", got)
	}
}
