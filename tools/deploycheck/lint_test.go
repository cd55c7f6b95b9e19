package deploycheck

import (
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// TestHelmLintStrict runs Helm's own linter the way `helm lint --strict`
// does (helm.sh/helm/v3/pkg/action.Lint with Strict): a warning fails as an
// error does. Both charts, with their default values and with the values
// files skaffold installs them with.
func TestHelmLintStrict(t *testing.T) {
	kube := &chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}
	cases := []struct{ chart, values string }{
		{"charts/quarters", ""},
		{"charts/quarters", "deploy/values-dev.yaml"},
		{"charts/quarters", "deploy/values-prod.example.yaml"},
		{"deploy/dev-deps", ""},
	}
	for _, c := range cases {
		t.Run(c.chart+" "+c.values, func(t *testing.T) {
			vals := map[string]any{}
			if c.values != "" {
				v, err := chartutil.ReadValuesFile(repoPath(t, c.values))
				if err != nil {
					t.Fatal(err)
				}
				vals = v
			}
			linter := lint.AllWithKubeVersionAndSchemaValidation(repoPath(t, c.chart), vals, "quarters", kube, false)
			for _, msg := range linter.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("%s", msg.Error())
				} else {
					t.Logf("%s", msg.Error())
				}
			}
		})
	}
}
