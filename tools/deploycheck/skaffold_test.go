package deploycheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The part of skaffold's v2 configuration schema (skaffold/v4beta*) that
// skaffold.yaml uses, with skaffold's own field names; decoding is strict, so
// a misspelt or unknown field fails as it fails in skaffold.
type skaffoldConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	skaffoldPipeline `json:",inline"`
	Profiles         []struct {
		Name       string `json:"name"`
		Activation []struct {
			Command     string `json:"command,omitempty"`
			Env         string `json:"env,omitempty"`
			KubeContext string `json:"kubeContext,omitempty"`
		} `json:"activation,omitempty"`
		Patches []struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value,omitempty"`
		} `json:"patches,omitempty"`
		skaffoldPipeline `json:",inline"`
	} `json:"profiles"`
}

type skaffoldPipeline struct {
	Build *struct {
		TagPolicy map[string]map[string]string `json:"tagPolicy,omitempty"`
		Local     *struct {
			Push        *bool `json:"push,omitempty"`
			UseBuildkit bool  `json:"useBuildkit,omitempty"`
			Concurrency *int  `json:"concurrency,omitempty"`
		} `json:"local,omitempty"`
		Artifacts []skaffoldArtifact `json:"artifacts"`
	} `json:"build,omitempty"`
	Deploy *struct {
		Helm struct {
			Releases []skaffoldHelmRelease `json:"releases"`
		} `json:"helm"`
	} `json:"deploy,omitempty"`
	PortForward []struct {
		ResourceType string `json:"resourceType"`
		ResourceName string `json:"resourceName"`
		Namespace    string `json:"namespace,omitempty"`
		Port         int    `json:"port"`
		LocalPort    int    `json:"localPort,omitempty"`
		Address      string `json:"address,omitempty"`
	} `json:"portForward,omitempty"`
}

type skaffoldArtifact struct {
	Image   string `json:"image"`
	Context string `json:"context"`
	Docker  *struct {
		Dockerfile string            `json:"dockerfile"`
		Target     string            `json:"target,omitempty"`
		BuildArgs  map[string]string `json:"buildArgs"`
	} `json:"docker"`
}

type skaffoldHelmRelease struct {
	Name              string            `json:"name"`
	ChartPath         string            `json:"chartPath"`
	Namespace         string            `json:"namespace,omitempty"`
	CreateNamespace   *bool             `json:"createNamespace,omitempty"`
	Wait              bool              `json:"wait,omitempty"`
	ValuesFiles       []string          `json:"valuesFiles,omitempty"`
	SetValueTemplates map[string]string `json:"setValueTemplates,omitempty"`
}

func TestSkaffoldConfig(t *testing.T) {
	var cfg skaffoldConfig
	if err := decodeStrict(string(mustRead(t, repoPath(t, "skaffold.yaml"))), &cfg); err != nil {
		t.Fatalf("skaffold.yaml: %v", err)
	}
	if !regexp.MustCompile(`^skaffold/v4beta\d+$`).MatchString(cfg.APIVersion) || cfg.Kind != "Config" {
		t.Errorf("apiVersion %q kind %q, want skaffold/v4beta* Config (skaffold v2)", cfg.APIVersion, cfg.Kind)
	}
	stages := stageNames(t)

	checkArtifacts := func(where string, p skaffoldPipeline) {
		if p.Build == nil {
			t.Fatalf("%s: no build", where)
		}
		got := map[string]bool{}
		for _, a := range p.Build.Artifacts {
			svc := strings.TrimPrefix(a.Image, "quarters/")
			if a.Docker == nil || a.Docker.Dockerfile != "Dockerfile" || a.Context != "." {
				t.Errorf("%s: %s is not built from the one Dockerfile at the repository root", where, a.Image)
				continue
			}
			if a.Docker.BuildArgs["SERVICE"] != svc || len(a.Docker.BuildArgs) != 1 {
				t.Errorf("%s: %s build args %v, want SERVICE=%s", where, a.Image, a.Docker.BuildArgs, svc)
			}
			if a.Docker.Target != "" && !stages[a.Docker.Target] {
				t.Errorf("%s: %s targets %q, not a stage of the Dockerfile", where, a.Image, a.Docker.Target)
			}
			got[svc] = true
		}
		if len(got) != len(Services) || len(p.Build.Artifacts) != len(Services) {
			t.Errorf("%s: artifacts %v, want one per service %v", where, got, Services)
		}
		for _, s := range Services {
			if !got[s] {
				t.Errorf("%s: no artifact for %s", where, s)
			}
		}
	}
	checkChartRelease := func(where string, r skaffoldHelmRelease) {
		for _, s := range Services {
			v := strings.ReplaceAll(s, "-", "_")
			if r.SetValueTemplates["services."+s+".image.repository"] != "{{.IMAGE_REPO_quarters_"+v+"}}" ||
				!strings.HasPrefix(r.SetValueTemplates["services."+s+".image.tag"], "{{.IMAGE_TAG_quarters_"+v+"}}") {
				t.Errorf("%s: the chart release does not get the built image of %s", where, s)
			}
		}
		for _, f := range r.ValuesFiles {
			if _, err := os.Stat(repoPath(t, f)); err != nil {
				t.Errorf("%s: values file %s: %v", where, f, err)
			}
			// The values file must pass the chart's schema.
			render(t, string(mustRead(t, repoPath(t, f))))
		}
	}

	// The base pipeline is `skaffold dev`: the dev dependencies, then the chart.
	checkArtifacts("build", cfg.skaffoldPipeline)
	if cfg.Deploy == nil || len(cfg.Deploy.Helm.Releases) != 2 {
		t.Fatalf("deploy: want the dev dependencies and the chart as Helm releases")
	}
	deps, app := cfg.Deploy.Helm.Releases[0], cfg.Deploy.Helm.Releases[1]
	if deps.ChartPath != "deploy/dev-deps" || !deps.Wait || app.ChartPath != "charts/quarters" {
		t.Errorf("deploy: releases %s (wait %v), %s; want deploy/dev-deps (waited for) then charts/quarters", deps.ChartPath, deps.Wait, app.ChartPath)
	}
	for _, r := range cfg.Deploy.Helm.Releases {
		if _, err := os.Stat(filepath.Join(repoPath(t, r.ChartPath), "Chart.yaml")); err != nil {
			t.Errorf("release %s: %v", r.Name, err)
		}
	}
	checkChartRelease("deploy", app)

	forwardsIngress := false
	for _, pf := range cfg.PortForward {
		if pf.ResourceType == "service" && strings.Contains(pf.ResourceName, "ingress") && pf.LocalPort == 8080 && pf.Port == 80 {
			forwardsIngress = true
		}
	}
	if !forwardsIngress {
		t.Errorf("no port-forward of the ingress controller to local port 8080: %+v", cfg.PortForward)
	}

	profiles := map[string]int{}
	for i, p := range cfg.Profiles {
		profiles[p.Name] = i
	}
	di, ok := profiles["dev"]
	if !ok {
		t.Fatal("no dev profile")
	}
	dev := cfg.Profiles[di]
	if len(dev.Activation) == 0 || dev.Activation[0].Command != "dev" {
		t.Errorf("the dev profile is not activated by `skaffold dev`: %+v", dev.Activation)
	}
	for _, p := range dev.Patches {
		if !strings.HasPrefix(p.Path, "/build/") || (p.Op != "add" && p.Op != "replace") {
			t.Errorf("dev patch %+v", p)
		}
	}
	pi, ok := profiles["prod"]
	if !ok {
		t.Fatal("no prod profile")
	}
	prod := cfg.Profiles[pi]
	checkArtifacts("prod build", prod.skaffoldPipeline)
	if prod.Build.Local == nil || prod.Build.Local.Push == nil || !*prod.Build.Local.Push {
		t.Error("the prod profile does not push its images")
	}
	if prod.Deploy == nil || len(prod.Deploy.Helm.Releases) != 1 || prod.Deploy.Helm.Releases[0].ChartPath != "charts/quarters" {
		t.Fatalf("prod deploy: want the chart alone, without the dev dependencies")
	}
	checkChartRelease("prod deploy", prod.Deploy.Helm.Releases[0])
	if len(prod.PortForward) != 0 {
		t.Errorf("prod forwards ports: %+v", prod.PortForward)
	}
}
