// Package benchkit holds what the dev-stack load benchmarks share: a dev
// stack started on a temporary data directory, admin and public API calls,
// waiting for the stack to go quiet, and latency summaries.
package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/services"
	"quarters.dev/tools/devstack/stack"
)

// Bench is a running dev stack with HTTP clients to drive it.
type Bench struct {
	St   *stack.Stack
	HTTP *http.Client
	dir  string
	out  bytes.Buffer
}

// Start builds and starts a whole dev stack on a temporary data directory,
// listening on loopback only.
func Start(ctx context.Context) (*Bench, error) {
	dir, err := os.MkdirTemp("", "quarters-bench-")
	if err != nil {
		return nil, err
	}
	b := &Bench{dir: dir, HTTP: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute},
	}}
	cfg := config.Defaults()
	cfg.Listen, cfg.DataDir, cfg.Demo = "127.0.0.1:0", dir, false
	log.Print("starting a dev stack (services build first)")
	t0 := time.Now()
	st, err := stack.Start(ctx, stack.Config{Config: cfg, Output: &b.out})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start dev stack: %w\n%s", err, b.out.String())
	}
	b.St = st
	log.Printf("dev stack ready in %s: ingress %s", time.Since(t0).Round(time.Second), st.IngressURL)
	return b, nil
}

// Stop stops the stack and removes its data directory.
func (b *Bench) Stop() {
	if b.St != nil {
		b.St.Stop()
	}
	os.RemoveAll(b.dir)
}

// Output is what the stack printed.
func (b *Bench) Output() string { return b.out.String() }

// Process returns the named service process.
func (b *Bench) Process(name string) (*services.Process, error) {
	for _, p := range b.St.Processes() {
		if p.Name == name && !p.Exited() {
			return p, nil
		}
	}
	return nil, fmt.Errorf("the %s service is not running", name)
}

// Do sends a request with an optional JSON body and returns the answer.
func (b *Bench) Do(ctx context.Context, method, url, auth string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := b.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, raw, err
}

// Admin calls the admin API through the ingress and decodes the answer into
// out, failing unless the status is want.
func (b *Bench) Admin(ctx context.Context, method, path string, body any, want int, out any) error {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return err
		}
	}
	code, answer, err := b.Do(ctx, method, b.St.AdminURL+path, "Bearer "+b.St.AdminToken, raw)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if code != want {
		return fmt.Errorf("%s %s answered %d, want %d: %s", method, path, code, want, bytes.TrimSpace(answer))
	}
	if out != nil {
		return json.Unmarshal(answer, out)
	}
	return nil
}

// Org creates an org with the given fields and a credential set, and
// returns the org id and a bearer token ("Bearer ...").
func (b *Bench) Org(ctx context.Context, fields map[string]any) (orgID, auth string, err error) {
	var o struct {
		Org struct {
			ID string `json:"id"`
		} `json:"org"`
	}
	if err := b.Admin(ctx, "POST", "/orgs", fields, 201, &o); err != nil {
		return "", "", err
	}
	var c struct {
		Credential struct {
			ClientID     string `json:"clientId"`
			ClientSecret string `json:"clientSecret"`
		} `json:"credential"`
	}
	if err := b.Admin(ctx, "POST", "/orgs/"+o.Org.ID+"/credentials", map[string]any{"name": "bench"}, 201, &c); err != nil {
		return "", "", err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.Credential.ClientID}, "client_secret": {c.Credential.ClientSecret}}
	res, err := b.HTTP.PostForm(b.St.BaseURL+"/oauth2/token", form)
	if err != nil {
		return "", "", err
	}
	defer res.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		return "", "", fmt.Errorf("mint token: %d %v", res.StatusCode, err)
	}
	return o.Org.ID, "Bearer " + tok.AccessToken, nil
}

// Retry repeats call while it fails in a way that passes (an org or
// listing still on its way to the service as an event, a busy store), for
// up to a minute.
func Retry(ctx context.Context, call func() error, transient ...string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := call()
		if err == nil {
			return nil
		}
		ok := strings.Contains(err.Error(), "answered 5")
		for _, t := range transient {
			ok = ok || strings.Contains(err.Error(), t)
		}
		if !ok || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Metric sums every sample of the named metric on a process's ops port.
func Metric(opsAddr, name string) (float64, error) {
	res, err := http.Get("http://" + opsAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var sum float64
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, sc.Err()
}

// WaitQuiet waits until no service has events waiting in its outbox and no
// consumer lags behind its topics, so that a measurement does not share the
// machine with the aftermath of seeding. It logs progress.
func (b *Bench) WaitQuiet(ctx context.Context, limit time.Duration) error {
	t0 := time.Now()
	last := time.Time{}
	for {
		var backlog, lag float64
		for _, p := range b.St.Processes() {
			if p.Exited() {
				continue
			}
			v, err := Metric(p.OpsAddr, "quarters_outbox_backlog_events")
			if err != nil {
				return err
			}
			backlog += v
			if v, err = Metric(p.OpsAddr, "quarters_kafka_consumer_lag_messages"); err != nil {
				return err
			}
			lag += v
		}
		if backlog == 0 && lag == 0 {
			log.Printf("stack quiet after %s", time.Since(t0).Round(100*time.Millisecond))
			return nil
		}
		if time.Since(t0) > limit {
			return fmt.Errorf("stack not quiet after %s: %.0f events in outboxes, consumers %.0f messages behind", limit, backlog, lag)
		}
		if time.Since(last) > 5*time.Second {
			log.Printf("waiting for the stack to settle: %.0f events in outboxes, consumers %.0f messages behind", backlog, lag)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Summary is a sorted latency sample.
type Summary []time.Duration

// Summarize sorts a copy of d.
func Summarize(d []time.Duration) Summary {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

// Q returns the q-quantile (nearest rank) in milliseconds.
func (s Summary) Q(q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.999999) - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}

// String is "p50 X ms, p90 Y ms, p99 Z ms, max W ms (n samples)".
func (s Summary) String() string {
	return fmt.Sprintf("p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples)", s.Q(0.5), s.Q(0.9), s.Q(0.99), s.Q(1), len(s))
}

// LoadAvg is the first line of /proc/loadavg, for the record.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// LogTail returns the last n lines of a service's log.
func (b *Bench) LogTail(name string, n int) string {
	for _, p := range b.St.Processes() {
		if p.Name == name {
			raw, err := os.ReadFile(p.LogPath)
			if err != nil {
				return err.Error()
			}
			lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
			return strings.Join(lines[max(0, len(lines)-n):], "\n")
		}
	}
	return "no " + name + " process"
}

// CPUTicks is the machine's busy and idle time so far, in clock ticks, from
// the first line of /proc/stat (busy: user, nice, system, irq, softirq,
// steal; idle: idle, iowait).
type CPUTicks struct{ Busy, Idle uint64 }

// ReadCPU reads CPUTicks; zero when /proc/stat cannot be read.
func ReadCPU() CPUTicks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTicks{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return CPUTicks{}
	}
	var v [8]uint64
	for i := range v {
		v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
	}
	return CPUTicks{Busy: v[0] + v[1] + v[2] + v[5] + v[6] + v[7], Idle: v[3] + v[4]}
}

// CPUSince describes the machine's CPU use since an earlier reading, spread
// over n units of work: "X ms of CPU per unit, Y% busy". Ticks are taken at
// 100 per second (USER_HZ on Linux).
func CPUSince(before CPUTicks, n int, unit string) string {
	after := ReadCPU()
	busy, idle := after.Busy-before.Busy, after.Idle-before.Idle
	if n == 0 || busy+idle == 0 {
		return "machine CPU: not measured"
	}
	return fmt.Sprintf("machine CPU: %.2f ms per %s, %.0f%% busy", float64(busy)*10/float64(n), unit, 100*float64(busy)/float64(busy+idle))
}
