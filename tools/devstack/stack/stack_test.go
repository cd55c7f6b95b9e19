package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"quarters.dev/pkg/testenv"
	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/demo"
	"quarters.dev/tools/devstack/embedded"
	"quarters.dev/tools/devstack/services"
)

var testsvc string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "devstack-testsvc")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testsvc = filepath.Join(dir, "testsvc")
	if out, err := exec.Command("go", "build", "-o", testsvc, "./testdata/testsvc").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build testsvc: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func svc(name string, env ...string) services.Spec {
	return services.Spec{Name: name, Binary: testsvc, Env: append([]string{"TESTSVC_NAME=" + name}, env...)}
}

func testConfig(dataDir string, out io.Writer, specs ...services.Spec) Config {
	c := config.Defaults()
	c.Listen = "127.0.0.1:0"
	c.DataDir = dataDir
	// A non-nil list: exactly these run, and no real service is built.
	// The test services answer the base steps' admin calls only.
	return Config{Config: c, Services: append([]services.Spec{}, specs...), Output: out, RedisBinary: "-", StopGrace: 5 * time.Second, ReadyTimeout: 20 * time.Second,
		DemoSteps: demo.BaseSteps()}
}

func start(t *testing.T, cfg Config) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func call(t *testing.T, method, url, token, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header}
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%s %s: body %q is not JSON", method, url, raw)
	}
	return a
}

func TestStackRunsServicesBehindTheIngress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := &testenv.Buffer{}
	s := start(t, testConfig(dir, out, svc("auth"), svc("catalog"), svc("bookings")))

	if strings.HasSuffix(s.IngressURL, ":0") || s.BaseURL != s.IngressURL+"/api/v1" || s.AdminURL != s.IngressURL+"/admin/v1" {
		t.Fatalf("urls %s %s %s", s.IngressURL, s.BaseURL, s.AdminURL)
	}
	printed := out.String()
	if !strings.Contains(printed, "quarters ready: api "+s.BaseURL+"  admin "+s.AdminURL+"  data ") {
		t.Fatalf("no ready line in:\n%s", printed)
	}

	a := call(t, "GET", s.BaseURL+"/listings", "", "")
	if a.status != 200 || a.body["service"] != "catalog" || a.body["publicUrl"] != s.IngressURL {
		t.Fatalf("GET listings: %d %v", a.status, a.body)
	}
	if !strings.Contains(a.body["mongo"].(string), fmt.Sprintf("maxPoolSize=%d", embedded.PoolSize)) || a.body["redis"] != s.RedisURL ||
		a.body["kafka"] != strings.Join(s.KafkaBrokers, ",") || a.body["allowHttp"] != "true" || a.body["smtp"] != s.SMTPAddr {
		t.Fatalf("service environment: %v", a.body)
	}
	if a := call(t, "GET", s.BaseURL+"/listings/l1/calendar", "", ""); a.status != 503 || a.body["message"] != "the availability service is not running" {
		t.Fatalf("calendar: %d %v", a.status, a.body)
	}
	a = call(t, "GET", s.IngressURL+"/readyz", "", "")
	svcs, _ := a.body["services"].(map[string]any)
	if a.status != 200 || svcs["auth"] != "ready" || svcs["catalog"] != "ready" || svcs["bookings"] != "ready" {
		t.Fatalf("readyz: %d %v", a.status, a.body)
	}

	// The demo org was seeded through the admin API and saved.
	if s.Demo == nil || s.Demo.OrgID != "org_1" || s.Demo.ClientSecret != "secret-org_1" {
		t.Fatalf("demo = %+v", s.Demo)
	}
	for _, want := range []string{"demo org:      org_1", "client secret: secret-org_1",
		"curl -s -u cid_org_1:secret-org_1 -d grant_type=client_credentials " + s.BaseURL + "/oauth2/token",
		s.BaseURL + "/listings"} {
		if !strings.Contains(printed, want) {
			t.Errorf("output lacks %q:\n%s", want, printed)
		}
	}
	saved, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	if err != nil || !strings.Contains(string(saved), `"clientId": "cid_org_1"`) {
		t.Fatalf("demo.json: %s %v", saved, err)
	}

	// A service sends mail through the sink; the admin route lists it.
	if a := call(t, "POST", s.BaseURL+"/inquiries", "", `{}`); a.status != 201 {
		t.Fatalf("POST inquiries: %d %v", a.status, a.body)
	}
	a = call(t, "GET", s.AdminURL+"/orgs/org_1/emails", s.AdminToken, "")
	emails, _ := a.body["emails"].([]any)
	if a.status != 200 || len(emails) != 1 || emails[0].(map[string]any)["inquiryId"] != "inq_1" ||
		emails[0].(map[string]any)["to"] != "guest@example.com" || emails[0].(map[string]any)["body"] != "Thanks.\n" ||
		emails[0].(map[string]any)["subject"] != "We received your inquiry" {
		t.Fatalf("emails: %d %v", a.status, a.body)
	}
	if a := call(t, "GET", s.AdminURL+"/orgs/org_1/emails", "", ""); a.status != 401 || a.body["error"] != "unauthorized" {
		t.Fatalf("emails without token: %d %v", a.status, a.body)
	}

	// A second start on the same data keeps the demo org and the mail.
	s.Stop()
	logs, _ := os.ReadFile(filepath.Join(dir, "logs", "auth.log"))
	if !strings.Contains(string(logs), "auth shutting down") || !strings.Contains(string(logs), "auth stopped") {
		t.Fatalf("auth was not stopped gracefully; its log:\n%s", logs)
	}
	out2 := &testenv.Buffer{}
	s2 := start(t, testConfig(dir, out2, svc("auth"), svc("catalog")))
	if !strings.Contains(out2.String(), "client secret: secret-org_1") || s2.Demo == nil || s2.Demo.OrgID != "org_1" {
		t.Fatalf("second start did not print the saved demo credentials:\n%s", out2)
	}
	if a := call(t, "GET", s2.AdminURL+"/orgs/org_1/emails", s2.AdminToken, ""); len(a.body["emails"].([]any)) != 1 {
		t.Fatalf("emails after restart: %v", a.body)
	}
}

func TestCrashedServiceIsReportedAndAnswers503(t *testing.T) {
	t.Parallel()
	out := &testenv.Buffer{}
	cfg := testConfig(t.TempDir(), out, svc("auth", "TESTSVC_CRASH_AFTER=200ms"), svc("catalog"))
	s := start(t, cfg)

	printed := out.String()
	if !strings.Contains(printed, "service auth exited (exit status 3)") {
		t.Fatalf("no exit report in:\n%s", printed)
	}
	if !strings.Contains(printed, "auth log line 60") || !strings.Contains(printed, "auth: cannot connect to the store") ||
		strings.Contains(printed, "auth log line 20\n") {
		t.Fatalf("exit report does not carry the last 40 log lines:\n%s", printed)
	}
	if !strings.Contains(printed, "not running (see above): auth\nquarters ready:") {
		t.Fatalf("no summary of the services that are down before the ready line:\n%s", printed)
	}
	if !strings.Contains(printed, "demo: not seeded, the auth service is not running") {
		t.Fatalf("demo seeding not skipped:\n%s", printed)
	}
	a := call(t, "POST", s.BaseURL+"/oauth2/token", "", "")
	if a.status != 503 || a.body["error"] != "service_unavailable" || a.body["message"] != "the auth service is not running" {
		t.Fatalf("token after crash: %d %v", a.status, a.body)
	}
	a = call(t, "GET", s.IngressURL+"/readyz", "", "")
	svcs, _ := a.body["services"].(map[string]any)
	if a.status != 503 || a.body["status"] != "not_ready" || svcs["auth"] != services.Exited || svcs["catalog"] != services.Ready {
		t.Fatalf("readyz: %d %v", a.status, a.body)
	}
	if p := s.Processes(); len(p) != 2 {
		t.Fatalf("%d processes, want 2 (no restart)", len(p))
	}
}

func TestServiceThatIsNeverReady(t *testing.T) {
	t.Parallel()
	out := &testenv.Buffer{}
	// auth runs and is ready, so only QUARTERS_DEMO=0 keeps the demo org
	// from being seeded.
	cfg := testConfig(t.TempDir(), out, svc("auth"), svc("catalog", "TESTSVC_NOT_READY=1"))
	cfg.ReadyTimeout = 500 * time.Millisecond
	cfg.Demo = false
	s := start(t, cfg)
	if !strings.Contains(out.String(), "catalog is running but not ready") {
		t.Fatalf("output:\n%s", out)
	}
	a := call(t, "GET", s.IngressURL+"/readyz", "", "")
	svcs := a.body["services"].(map[string]any)
	if a.status != 503 || svcs["catalog"] != services.Starting || svcs["auth"] != services.Ready {
		t.Fatalf("readyz: %d %v", a.status, a.body)
	}
	// Running but not ready, it is routed to, so its own answers explain.
	if a := call(t, "GET", s.BaseURL+"/listings", "", ""); a.status != 200 || a.body["service"] != "catalog" {
		t.Fatalf("GET listings: %d %v", a.status, a.body)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "demo.json")); err == nil || s.Demo != nil || strings.Contains(out.String(), "demo org:") {
		t.Fatalf("demo seeded with QUARTERS_DEMO=0 (demo.json: %v):\n%s", err, out)
	}
}

func TestRefusesSecondStackOnSameDataAndBusyPort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, testConfig(dir, io.Discard))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Start(ctx, testConfig(dir, io.Discard)); err == nil || !strings.Contains(err.Error(), "another dev stack") {
		t.Fatalf("second stack on the same data dir: %v", err)
	}
	cfg := testConfig(t.TempDir(), io.Discard)
	cfg.Listen = strings.TrimPrefix(s.IngressURL, "http://")
	if _, err := Start(ctx, cfg); err == nil || !strings.Contains(err.Error(), "QUARTERS_LISTEN") {
		t.Fatalf("busy port: %v", err)
	}
	// The failed start released what it took: its data dir is free again.
	f, err := os.OpenFile(filepath.Join(cfg.DataDir, ".lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the failed start did not lock its data dir first: %v", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the failed start still holds its data dir: %v", err)
	}
}
