package deploycheck

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH (Debian package prometheus; .ci/run installs it)")
	}
	return p
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// The alerts the rules must hold, one per failure the SREs watch for.
var wantAlerts = []string{
	"QuartersHigh5xxRatio",           // high 5xx ratio per service
	"QuartersRouteLatencyOverBudget", // p99 per route over budget
	"QuartersOutboxBacklogGrowing",
	"QuartersConsumerLagGrowing",
	"QuartersWebhookFailureRatio",
	"QuartersServiceDown",
	"QuartersToken401Spike",
}

func TestAlertRulesCheckAndUnitTests(t *testing.T) {
	dir := repoPath(t, ObservabilityDir)
	runPromtool(t, dir, "check", "rules", "quarters-alerts.yaml")
	runPromtool(t, dir, "test", "rules", "quarters-alerts.test.yaml")
}

func TestEveryAlertHasAUnitTestAndARunbook(t *testing.T) {
	rf, err := LoadRules(repoPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		RuleFiles          []string `json:"rule_files"`
		EvaluationInterval string   `json:"evaluation_interval"`
		Tests              []struct {
			Name          string `json:"name"`
			Interval      string `json:"interval"`
			InputSeries   []any  `json:"input_series"`
			AlertRuleTest []struct {
				EvalTime  string `json:"eval_time"`
				Alertname string `json:"alertname"`
				ExpAlerts []struct {
					ExpLabels      map[string]string `json:"exp_labels"`
					ExpAnnotations map[string]string `json:"exp_annotations"`
				} `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.UnmarshalStrict(mustRead(t, repoPath(t, ObservabilityDir, "quarters-alerts.test.yaml")), &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	runbooks := string(mustRead(t, repoPath(t, "docs", "runbooks.md")))
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)\s*$`).FindAllStringSubmatch(runbooks, -1) {
		headings[m[1]] = true
	}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: the unit tests must show it firing (%v) and staying quiet (%v)", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
			if !headings[r.Alert] {
				t.Errorf("%s: no '## %s' section in docs/runbooks.md", r.Alert, r.Alert)
			}
			if want := "docs/runbooks.md#" + strings.ToLower(r.Alert); r.Annotations["runbook"] != want {
				t.Errorf("%s: runbook annotation %q, want %q", r.Alert, r.Annotations["runbook"], want)
			}
			if r.Labels["severity"] != "critical" && r.Labels["severity"] != "warning" {
				t.Errorf("%s: severity %q", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.For == "" {
				t.Errorf("%s: needs a summary and a for duration", r.Alert)
			}
		}
	}
	for _, a := range wantAlerts {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}
}

// TestDashboard checks the Grafana dashboard: every query is valid PromQL
// (promtool checks them as recording rules), every panel reads the data
// source variable, and the dashboard covers RED per service, the outbox,
// consumer lag, webhooks, inquiry quota rejections and the Go runtime.
func TestDashboard(t *testing.T) {
	d, err := LoadDashboard(repoPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a uid and a title")
	}
	var rules []Rule
	ids := map[int]bool{}
	var raw struct {
		Panels []struct {
			ID int `json:"id"`
		} `json:"panels"`
	}
	_ = json.Unmarshal(mustRead(t, repoPath(t, ObservabilityDir, "quarters-dashboard.json")), &raw)
	for _, p := range raw.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
	}
	grafanaVars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$service", ".+")
	for i, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d queries", p.Title, p.Datasource, len(p.Targets))
		}
		for j, tg := range p.Targets {
			rules = append(rules, Rule{Record: fmt.Sprintf("dashboard:panel%d_%d", i, j), Expr: grafanaVars.Replace(tg.Expr)})
		}
	}
	dir := t.TempDir()
	b, _ := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err := os.WriteFile(filepath.Join(dir, "dashboard-queries.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	uses, err := Uses(repoPath(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{
		"quarters_http_requests_total", "quarters_http_request_duration_seconds_bucket",
		"quarters_outbox_backlog_events", "quarters_kafka_consumer_lag_messages",
		"quarters_webhook_deliveries_total", "quarters_webhook_event_to_attempt_seconds_bucket",
		"quarters_webhook_attempt_duration_seconds_bucket",
		"quarters_bookings_inquiry_quota_rejections_total", "go_goroutines",
	} {
		inPanel := false
		for _, u := range uses[m] {
			inPanel = inPanel || strings.HasPrefix(u, "panel ")
		}
		if !inPanel {
			t.Errorf("no panel shows %s", m)
		}
	}
	runPromtool(t, dir, "check", "rules", "dashboard-queries.yaml")
}

func TestExprMetrics(t *testing.T) {
	got := ExprMetrics(`histogram_quantile(0.99, sum by (service, route, le) (rate(quarters_http_request_duration_seconds_bucket{service=~"$service", route!="go_x"}[$__rate_interval]))) / on(service) group_left service:quarters_http_requests:rate5m > bool 0 or vector(0) unless go_goroutines offset 1h`)
	if strings.Join(got, ",") != "quarters_http_request_duration_seconds_bucket,go_goroutines" {
		t.Errorf("ExprMetrics = %v", got)
	}
	names := SampleNames("# HELP x y\n# TYPE x counter\nx_total{a=\"b\"} 1\ngo_goroutines 7\nh_bucket{le=\"+Inf\"} 2\n")
	if len(names) != 3 || !names["x_total"] || !names["go_goroutines"] || !names["h_bucket"] {
		t.Errorf("SampleNames = %v", names)
	}
}
