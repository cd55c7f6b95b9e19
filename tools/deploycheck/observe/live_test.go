package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"quarters.dev/pkg/routes"
	"quarters.dev/tools/deploycheck"
	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/stack"
)

// The services of the routing table (the dev-only SMTP sink aside).
var allServices = []string{"agreements", "auth", "availability", "bookings", "catalog", "webhook-dispatcher"}

// owners says which services expose a metric, by name prefix. every means
// each of them must; otherwise at least one running owner must.
var owners = []struct {
	prefix   string
	services []string
	every    bool
}{
	{"quarters_http_", allServices, true},
	{"go_", allServices, true},
	{"process_", allServices, true},
	{"quarters_outbox_", []string{"auth", "catalog", "availability", "bookings", "agreements"}, false},
	{"quarters_kafka_consumer_", []string{"availability", "bookings", "agreements", "webhook-dispatcher"}, false},
	{"quarters_webhook_", []string{"webhook-dispatcher"}, false},
	{"quarters_bookings_", []string{"bookings"}, false},
}

var st *stack.Stack

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "quarters-observe-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	var out bytes.Buffer
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.RedisURL = os.Getenv("QUARTERS_TEST_REDIS_URL")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	st, err = stack.Start(ctx, stack.Config{Config: cfg, Output: &out})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start dev stack: %v\n%s", err, out.String())
		return 1
	}
	code := m.Run()
	st.Stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "dev stack output:\n%s", out.String())
	}
	return code
}

func running() map[string]string {
	out := map[string]string{}
	for _, p := range st.Processes() {
		if !p.Exited() {
			out[p.Name] = p.OpsAddr
		}
	}
	return out
}

// exercise sends the traffic after which every metric of a running service
// has samples: one request to a route of every service through the ingress,
// a rejected token request, and, with the dispatcher running, a webhook ping
// to a local receiver.
func exercise(t *testing.T, up map[string]string) {
	t.Helper()
	if st.Demo == nil {
		t.Fatal("the demo org was not seeded")
	}
	table, err := routes.Default(false)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for _, r := range table.Routes() {
		if up[r.Service] == "" || done[r.Service] || !strings.HasPrefix(r.Path, "/api/") {
			continue
		}
		done[r.Service] = true
		path := strings.ReplaceAll(r.Path, routes.Param, "x")
		req, _ := http.NewRequest(http.MethodGet, st.IngressURL+path, nil)
		req.SetBasicAuth(st.Demo.ClientID, st.Demo.ClientSecret)
		send(t, req)
	}
	req, _ := http.NewRequest(http.MethodPost, st.BaseURL+"/oauth2/token", strings.NewReader("grant_type=client_credentials&client_id="+st.Demo.ClientID+"&client_secret=wrong"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp := send(t, req); resp != 401 {
		t.Errorf("token with a wrong secret: %d", resp)
	}
	if up["webhook-dispatcher"] != "" {
		var received atomic.Int32
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			received.Add(1)
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(receiver.Close)
		var created struct {
			Webhook struct {
				ID string `json:"id"`
			} `json:"webhook"`
		}
		admin(t, "POST", "/orgs/"+st.Demo.OrgID+"/webhooks", `{"url":"`+receiver.URL+`/hook"}`, 201, &created)
		admin(t, "POST", "/orgs/"+st.Demo.OrgID+"/webhooks/"+created.Webhook.ID+"/ping", "", 202, nil)
		deadline := time.Now().Add(30 * time.Second)
		for received.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if received.Load() == 0 {
			t.Error("the ping delivery never arrived")
		}
	}
}

func send(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func admin(t *testing.T, method, path, body string, want int, into any) {
	t.Helper()
	req, _ := http.NewRequest(method, st.AdminURL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+st.AdminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
}

func scrape(t *testing.T, addr string) map[string]bool {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("scrape %s: %d", addr, resp.StatusCode)
	}
	return deploycheck.SampleNames(string(b))
}

// TestEveryMetricOfRulesAndDashboardIsExported scrapes the ops port of every
// service the dev stack runs and checks that each metric the alert rules and
// the dashboard read is exported by the services that own it. Metrics whose
// owners are not running (services not written yet) are listed, not checked.
func TestEveryMetricOfRulesAndDashboardIsExported(t *testing.T) {
	root, err := deploycheck.Root()
	if err != nil {
		t.Fatal(err)
	}
	uses, err := deploycheck.Uses(root)
	if err != nil {
		t.Fatal(err)
	}
	up := running()
	var notRunning []string
	for _, s := range allServices {
		if up[s] == "" {
			notRunning = append(notRunning, s)
		}
	}
	if up["auth"] == "" {
		t.Fatal("auth is not running")
	}
	exercise(t, up)

	var missing, unchecked []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		scrapes := map[string]map[string]bool{}
		for s, addr := range up {
			scrapes[s] = scrape(t, addr)
		}
		missing, unchecked = nil, nil
		for metric, where := range uses {
			var own []string
			every := false
			for _, o := range owners {
				if strings.HasPrefix(metric, o.prefix) {
					own, every = o.services, o.every
					break
				}
			}
			if own == nil {
				t.Errorf("%s (%s): no owning service known; add its prefix to owners", metric, strings.Join(where, ", "))
				continue
			}
			var have, lack []string
			for _, s := range own {
				switch {
				case up[s] == "":
				case scrapes[s][metric]:
					have = append(have, s)
				default:
					lack = append(lack, s)
				}
			}
			switch {
			case len(have)+len(lack) == 0:
				unchecked = append(unchecked, fmt.Sprintf("%s (owned by %s)", metric, strings.Join(own, ", ")))
			case every && len(lack) > 0, len(have) == 0:
				missing = append(missing, fmt.Sprintf("%s: not exported by %s (read by %s)", metric, strings.Join(lack, ", "), strings.Join(where, "; ")))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	sort.Strings(missing)
	sort.Strings(unchecked)
	t.Logf("services not running in the dev stack: %v", notRunning)
	if len(unchecked) > 0 {
		t.Logf("not checked, their services are not running:\n  %s", strings.Join(unchecked, "\n  "))
	}
	if len(missing) > 0 {
		t.Errorf("metrics read by the rules or the dashboard and missing from /metrics:\n  %s", strings.Join(missing, "\n  "))
	}
}

// TestPrometheusScrapesTheDevStack runs `make observe`'s Prometheus against
// the dev stack: every service is a healthy target with its service label,
// and the alert rules are loaded and evaluated.
func TestPrometheusScrapesTheDevStack(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not on PATH (Debian package prometheus; .ci/run installs it)")
	}
	root, err := deploycheck.Root()
	if err != nil {
		t.Fatal(err)
	}
	var targets []Target
	for s, addr := range running() {
		targets = append(targets, Target{Service: s, Addr: addr})
	}
	listen := freeAddr(t)
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, err := Start(ctx, targets, Options{Binary: bin, Dir: dir, Listen: listen, RulesFile: filepath.Join(root, deploycheck.ObservabilityDir, "quarters-alerts.yaml"), Interval: time.Second, Output: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	defer p.Stop()
	if tool, err := exec.LookPath("promtool"); err == nil {
		if out, err := exec.Command(tool, "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput(); err != nil {
			t.Errorf("promtool check config: %v\n%s", err, out)
		}
	}

	var state struct {
		Data struct {
			ActiveTargets []struct {
				Labels    map[string]string `json:"labels"`
				Health    string            `json:"health"`
				LastError string            `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	healthy := map[string]bool{}
	for ctx.Err() == nil && len(healthy) < len(targets) {
		getJSON(t, p.URL+"/api/v1/targets", &state)
		healthy = map[string]bool{}
		for _, tg := range state.Data.ActiveTargets {
			if tg.Health == "up" {
				healthy[tg.Labels["service"]] = true
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, tg := range targets {
		if !healthy[tg.Service] {
			t.Errorf("%s is not a healthy target: %+v", tg.Service, state.Data.ActiveTargets)
		}
	}

	var rules struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name   string `json:"name"`
					Type   string `json:"type"`
					Health string `json:"health"`
					Error  string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	alerts := 0
	for ctx.Err() == nil {
		getJSON(t, p.URL+"/api/v1/rules", &rules)
		alerts = 0
		evaluated := true
		for _, g := range rules.Data.Groups {
			for _, r := range g.Rules {
				if r.Type == "alerting" {
					alerts++
				}
				evaluated = evaluated && r.Health == "ok"
			}
		}
		if alerts > 0 && evaluated {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if alerts < 7 {
		t.Errorf("%d alert rules loaded and evaluated: %+v", alerts, rules.Data.Groups)
	}
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
