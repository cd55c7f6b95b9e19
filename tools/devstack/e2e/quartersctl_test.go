package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ctlRunner runs the quartersctl binary against the dev stack, configured
// through the environment as an operator's shell would be.
type ctlRunner struct {
	t   *testing.T
	bin string
	env []string
}

type ctlResult struct {
	code           int
	stdout, stderr string
}

// buildTool builds one command of the workspace into dir.
func buildTool(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func (c *ctlRunner) run(args ...string) ctlResult {
	c.t.Helper()
	cmd := exec.CommandContext(c.t.Context(), c.bin, args...)
	cmd.Env = c.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	res := ctlResult{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("quartersctl %v: %v", args, err)
	}
	return res
}

// ok runs a command that must succeed and returns its stdout.
func (c *ctlRunner) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("quartersctl %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// eventually runs a command until it succeeds: a record created a moment
// ago reaches the other services through Kafka.
func (c *ctlRunner) eventually(args ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := c.run(args...)
		if r.code == 0 {
			return r.stdout
		}
		if r.code != 2 || time.Now().After(deadline) {
			c.t.Fatalf("quartersctl %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return m
}

// TestQuartersctl drives the quartersctl binary through an operator's day:
// an org and a credential set, a property from a file, published, a block
// seen on the calendar, a webhook endpoint pinged and the ping received
// verified by the example receiver, and imports that stay free of
// duplicates when run again.
func TestQuartersctl(t *testing.T) {
	dir := t.TempDir()
	c := &ctlRunner{t: t, bin: buildTool(t, dir, "tools/quartersctl")}
	base := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "QUARTERS_") {
			base = append(base, kv)
		}
	}
	c.env = append(base, "QUARTERS_URL="+strings.TrimSuffix(st.BaseURL, "/api/v1"), "QUARTERS_ADMIN_TOKEN="+st.AdminToken,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"))

	org := obj(decodeJSON(t, c.ok("orgs", "create", "--name", "quartersctl e2e", "--json"))["org"])["id"].(string)
	c.env = append(c.env, "QUARTERS_ORG="+org)
	if out := c.ok("orgs", "get"); !strings.Contains(out, "quartersctl e2e") {
		t.Errorf("orgs get:\n%s", out)
	}
	cred := obj(decodeJSON(t, c.ok("credentials", "create", "--name", "e2e", "--json"))["credential"])
	c.env = append(c.env, "QUARTERS_CLIENT_ID="+cred["clientId"].(string), "QUARTERS_CLIENT_SECRET="+cred["clientSecret"].(string))
	if out := c.ok("credentials", "list"); !strings.Contains(out, cred["clientId"].(string)) {
		t.Errorf("credentials list:\n%s", out)
	}

	draft := filepath.Join(dir, "canal-house.json")
	if err := os.WriteFile(draft, []byte(propertyDraft("Canal House", "img.example.com")), 0o644); err != nil {
		t.Fatal(err)
	}
	created := decodeJSON(t, c.eventually("properties", "create", "-f", draft, "--publish", "--json"))
	prop := obj(created["property"])["id"].(string)
	if obj(created["listing"])["id"] != prop {
		t.Fatalf("publish answered %v", created["listing"])
	}

	start := time.Now().UTC().AddDate(0, 2, 0).Format(time.DateOnly)
	end := time.Now().UTC().AddDate(0, 2, 5).Format(time.DateOnly)
	block := obj(decodeJSON(t, c.eventually("blocks", "add", prop, "--start", start, "--end", end, "--reason", "e2e", "--json"))["block"])
	if out := c.ok("blocks", "list", prop); !strings.Contains(out, block["id"].(string)) {
		t.Errorf("blocks list:\n%s", out)
	}
	// The calendar shows the five blocked days once availability has both
	// the listing and the block.
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := c.run("calendar", prop, "--start", start, "--end", end, "--json")
		unavailable := 0
		if r.code == 0 {
			for _, d := range decodeJSON(t, r.stdout)["days"].([]any) {
				if obj(d)["status"] == "unavailable" {
					unavailable++
				}
			}
		}
		if unavailable == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calendar never showed the block: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if out := c.ok("listings"); !strings.Contains(out, "Canal House") {
		t.Errorf("listings:\n%s", out)
	}

	t.Run("webhook ping arrives verified", func(t *testing.T) {
		c := &ctlRunner{t: t, bin: c.bin, env: c.env}
		addr := freeAddr(t)
		hook := obj(decodeJSON(t, c.eventually("webhooks", "add", "http://"+addr+"/hooks", "--json"))["webhook"])
		recv := startReceiver(t, buildTool(t, dir, "tools/webhook-receiver"), "-listen", addr, "-path", "/hooks", "-secret", hook["secret"].(string))
		for deadline := time.Now().Add(10 * time.Second); ; {
			conn, err := net.Dial("tcp", addr)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the receiver does not listen on %s: %v", addr, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.ok("webhooks", "ping", hook["id"].(string))
		line := recv.wait(t, 30*time.Second, " ping ")
		if !strings.Contains(line, "webhookId="+hook["id"].(string)) {
			t.Errorf("receiver printed %q", line)
		}
		deliveries := decodeJSON(t, c.ok("webhooks", "deliveries", hook["id"].(string), "--json"))["deliveries"].([]any)
		if len(deliveries) == 0 || obj(deliveries[0])["event"] != "ping" {
			t.Errorf("deliveries: %v", deliveries)
		}
	})

	t.Run("imports run twice create once", func(t *testing.T) {
		c := &ctlRunner{t: t, bin: c.bin, env: c.env}
		props := filepath.Join(dir, "props.jsonl")
		var lines []string
		for _, n := range []string{"Harbour Loft", "Garden Studio"} {
			lines = append(lines, propertyDraft(n, "img.example.com"))
		}
		if err := os.WriteFile(props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := c.ok("import", "properties", props, "--publish"); !strings.Contains(out, "properties: 2 created, 0 replaced") {
			t.Errorf("first import:\n%s", out)
		}
		if out := c.ok("import", "properties", props); !strings.Contains(out, "properties: 0 created, 2 replaced") {
			t.Errorf("second import:\n%s", out)
		}
		ci := time.Now().UTC().AddDate(0, 6, 0).Format(time.DateOnly)
		co := time.Now().UTC().AddDate(0, 9, 0).Format(time.DateOnly)
		res := filepath.Join(dir, "bookings.csv")
		csv := "propertyId,status,checkIn,checkOut,guest.firstName,guest.lastName,guest.email\n" +
			fmt.Sprintf("%s,reserved,%s,%s,Ada,Lovelace,ada@example.com\n", prop, ci, co) +
			fmt.Sprintf("%s,inquiry,%s,%s,Alan,Turing,alan@example.com\n", prop, ci, co)
		if err := os.WriteFile(res, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := c.eventually("import", "reservations", res); !strings.Contains(out, "reservations: 2 created, 0 already there") {
			t.Errorf("first import:\n%s", out)
		}
		if out := c.ok("import", "reservations", res, "--concurrency", "2"); !strings.Contains(out, "reservations: 0 created, 2 already there") {
			t.Errorf("second import:\n%s", out)
		}
		all := decodeJSON(t, c.ok("reservations", "--property", prop, "--all", "--limit", "1", "--json"))
		if all["total"].(float64) != 2 || len(all["reservations"].([]any)) != 2 {
			t.Errorf("reservations --all: %v", all)
		}
		state := filepath.Join(dir, "sync.json")
		if out := c.ok("sync", "--state", state); strings.Count(out, "\n") != 2 || !strings.Contains(out, "Ada Lovelace") {
			t.Errorf("first sync:\n%s", out)
		}
		if out := c.ok("sync", "--state", state); out != "" {
			t.Errorf("second sync printed:\n%s", out)
		}
	})
}

// receiver is the example webhook receiver running as a process.
type receiver struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{}
}

func startReceiver(t *testing.T, bin string, args ...string) *receiver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &receiver{more: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("receiver log:\n%s", logs.String())
		}
	})
	return r
}

// wait returns the first line printed that contains s.
func (r *receiver) wait(t *testing.T, d time.Duration, s string) string {
	t.Helper()
	timeout := time.After(d)
	for {
		r.mu.Lock()
		for _, l := range r.lines {
			if strings.Contains(l, s) {
				r.mu.Unlock()
				return l
			}
		}
		r.mu.Unlock()
		select {
		case <-r.more:
		case <-timeout:
			t.Fatalf("the receiver printed no line with %q", s)
		}
	}
}
