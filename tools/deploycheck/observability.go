package deploycheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []Rule `json:"rules"`
	} `json:"groups"`
}

// Rule is one recording or alerting rule.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Dashboard is the part of a Grafana dashboard the checks read.
type Dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []Panel `json:"panels"`
	// Templating variables may query metrics too.
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; rows hold no queries.
type Panel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// ObservabilityDir is where the alert rules and the dashboard live, relative
// to the repository root.
const ObservabilityDir = "deploy/observability"

// LoadRules reads deploy/observability/quarters-alerts.yaml.
func LoadRules(root string) (*RuleFile, error) {
	b, err := os.ReadFile(filepath.Join(root, ObservabilityDir, "quarters-alerts.yaml"))
	if err != nil {
		return nil, err
	}
	var rf RuleFile
	if err := yaml.UnmarshalStrict(b, &rf); err != nil {
		return nil, fmt.Errorf("quarters-alerts.yaml: %w", err)
	}
	return &rf, nil
}

// LoadDashboard reads deploy/observability/quarters-dashboard.json.
func LoadDashboard(root string) (*Dashboard, error) {
	b, err := os.ReadFile(filepath.Join(root, ObservabilityDir, "quarters-dashboard.json"))
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("quarters-dashboard.json: %w", err)
	}
	return &d, nil
}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers   = regexp.MustCompile(`\{[^}]*\}`)
	ranges     = regexp.MustCompile(`\[[^\]]*\]`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// Names the exporters of Quarters' processes produce: its own metrics
	// and the Go and process collectors.
	exported = regexp.MustCompile(`^(quarters|go|process)_`)
)

// ExprMetrics returns the exported metric names a PromQL expression reads:
// label matchers, strings and range selectors are dropped, and of the
// remaining identifiers those named like Quarters', Go or process metrics
// are kept (functions, keywords and label names never are).
func ExprMetrics(expr string) []string {
	e := quoted.ReplaceAllString(expr, `""`)
	e = matchers.ReplaceAllString(e, " ")
	e = ranges.ReplaceAllString(e, " ")
	seen := map[string]bool{}
	var out []string
	for _, id := range identifier.FindAllString(e, -1) {
		if strings.Contains(id, ":") || !exported.MatchString(id) || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}

// Uses maps every exported metric that the rules and the dashboard read to
// where it is read ("alert X", "record Y", "panel Z").
func Uses(root string) (map[string][]string, error) {
	rf, err := LoadRules(root)
	if err != nil {
		return nil, err
	}
	d, err := LoadDashboard(root)
	if err != nil {
		return nil, err
	}
	uses := map[string][]string{}
	add := func(expr, where string) {
		for _, m := range ExprMetrics(expr) {
			uses[m] = append(uses[m], where)
		}
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				add(r.Expr, "alert "+r.Alert)
			} else {
				add(r.Expr, "record "+r.Record)
			}
		}
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			add(tg.Expr, "panel "+p.Title)
		}
	}
	for _, v := range d.Templating.List {
		add(v.Definition, "variable "+v.Name)
	}
	for m := range uses {
		sort.Strings(uses[m])
	}
	return uses, nil
}

// SampleNames returns the sample names of a Prometheus text exposition
// (histograms appear as their _bucket, _sum and _count series).
func SampleNames(exposition string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}
