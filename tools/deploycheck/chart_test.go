package deploycheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"quarters.dev/pkg/routes"
)

// Services are the six Quarters services the chart deploys.
var Services = []string{"agreements", "auth", "availability", "bookings", "catalog", "webhook-dispatcher"}

const release = "prod"

// manifests is one rendering of the chart, decoded.
type manifests struct {
	deployments     map[string]*appsv1.Deployment
	services        map[string]*corev1.Service
	serviceAccounts map[string]*corev1.ServiceAccount
	hpas            map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs            map[string]*policyv1.PodDisruptionBudget
	secrets         map[string]*corev1.Secret
	configMaps      map[string]*corev1.ConfigMap
	ingresses       map[string]*networkingv1.Ingress
	netpols         map[string]*networkingv1.NetworkPolicy
	serviceMonitors map[string]*ServiceMonitor
	rules           map[string]*PrometheusRule
	notes           string
}

func repoPath(t testing.TB, rel ...string) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, rel...)...)
}

func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(repoPath(t, "charts", "quarters"))
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return ch
}

// renderChart renders the chart with the given values (YAML) as `helm
// template` does, schema validation included.
func renderChart(t testing.TB, valuesYAML string) (map[string]string, error) {
	t.Helper()
	ch := loadChart(t)
	vals, err := chartutil.ReadValues([]byte(valuesYAML))
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: release, Namespace: "quarters", IsInstall: true, Revision: 1}, caps)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

// render renders and decodes strictly: every document must be a known kind
// and every field must exist in its Kubernetes API type.
func render(t *testing.T, valuesYAML string) *manifests {
	t.Helper()
	files, err := renderChart(t, valuesYAML)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	m := &manifests{
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		serviceAccounts: map[string]*corev1.ServiceAccount{}, hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, secrets: map[string]*corev1.Secret{},
		configMaps: map[string]*corev1.ConfigMap{}, ingresses: map[string]*networkingv1.Ingress{},
		netpols: map[string]*networkingv1.NetworkPolicy{}, serviceMonitors: map[string]*ServiceMonitor{},
		rules: map[string]*PrometheusRule{},
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		content := files[name]
		if strings.HasSuffix(name, "NOTES.txt") {
			m.notes = content
			continue
		}
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range splitYAML(content) {
			if err := m.add(doc); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
		}
	}
	return m
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func splitYAML(s string) []string {
	var out []string
	for _, d := range docSep.Split(s, -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			out = append(out, d)
		}
	}
	return out
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// decodeStrict decodes YAML into v, failing on duplicate or unknown fields.
func decodeStrict(doc string, v any) error {
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (m *manifests) add(doc string) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		return err
	}
	key := head.APIVersion + "/" + head.Kind
	var err error
	switch key {
	case "apps/v1/Deployment":
		err = put(m.deployments, head.Metadata.Name, doc)
	case "v1/Service":
		err = put(m.services, head.Metadata.Name, doc)
	case "v1/ServiceAccount":
		err = put(m.serviceAccounts, head.Metadata.Name, doc)
	case "autoscaling/v2/HorizontalPodAutoscaler":
		err = put(m.hpas, head.Metadata.Name, doc)
	case "policy/v1/PodDisruptionBudget":
		err = put(m.pdbs, head.Metadata.Name, doc)
	case "v1/Secret":
		err = put(m.secrets, head.Metadata.Name, doc)
	case "v1/ConfigMap":
		err = put(m.configMaps, head.Metadata.Name, doc)
	case "networking.k8s.io/v1/Ingress":
		err = put(m.ingresses, head.Metadata.Name, doc)
	case "networking.k8s.io/v1/NetworkPolicy":
		err = put(m.netpols, head.Metadata.Name, doc)
	case "monitoring.coreos.com/v1/ServiceMonitor":
		err = put(m.serviceMonitors, head.Metadata.Name, doc)
	case "monitoring.coreos.com/v1/PrometheusRule":
		err = put(m.rules, head.Metadata.Name, doc)
	default:
		return fmt.Errorf("unexpected kind %s", key)
	}
	return err
}

func put[T any](into map[string]*T, name, doc string) error {
	if name == "" {
		return fmt.Errorf("no metadata.name")
	}
	if _, dup := into[name]; dup {
		return fmt.Errorf("%s rendered twice", name)
	}
	v := new(T)
	if err := decodeStrict(doc, v); err != nil {
		return err
	}
	into[name] = v
	return nil
}

func objName(service string) string { return release + "-quarters-" + service }

// The value sets the chart is rendered with in every test below.
var valueSets = map[string]string{
	"defaults": ``,
	"everything on": `
global:
  otlpEndpoint: otel-collector.observability:4318
adminIngress:
  enabled: true
  annotations:
    nginx.ingress.kubernetes.io/whitelist-source-range: 10.0.0.0/8
metrics:
  serviceMonitor: {enabled: true}
  prometheusRule: {enabled: true}
  grafanaDashboard: {enabled: true}
adminToken:
  value: an-admin-token-for-tests
`,
	"existing secrets": `
mongo:
  uri: ""
  existingSecret: {name: managed-mongo, key: uri}
redis:
  url: ""
  existingSecret: {name: managed-redis, key: url}
smtp:
  url: ""
  existingSecret: {name: relay, key: smtp}
adminToken:
  existingSecret: {name: quarters-admin, key: token}
`,
	"autoscaling off": autoscalingOff(),
	"admin ingress on": `
adminIngress:
  enabled: true
`,
}

func autoscalingOff() string {
	var b strings.Builder
	b.WriteString("services:\n")
	for _, s := range Services {
		fmt.Fprintf(&b, "  %s:\n    replicas: 3\n    autoscaling: {enabled: false}\n", s)
	}
	return b.String()
}

func TestChartRendersEveryServiceWithItsObjects(t *testing.T) {
	for setName, values := range valueSets {
		t.Run(setName, func(t *testing.T) {
			m := render(t, values)
			autoscaling := setName != "autoscaling off"
			for _, s := range Services {
				n := objName(s)
				d := m.deployments[n]
				if d == nil || m.services[n] == nil || m.serviceAccounts[n] == nil || m.pdbs[n] == nil {
					t.Fatalf("%s: missing Deployment, Service, ServiceAccount or PodDisruptionBudget", s)
				}
				if hpa := m.hpas[n]; autoscaling != (hpa != nil) {
					t.Errorf("%s: HPA rendered %v, autoscaling %v", s, hpa != nil, autoscaling)
				} else if hpa != nil {
					if hpa.Spec.ScaleTargetRef.Name != n || hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
						t.Errorf("%s: HPA %+v", s, hpa.Spec)
					}
				}
				switch {
				case autoscaling && d.Spec.Replicas != nil:
					t.Errorf("%s: replicas %d set while the HPA scales it", s, *d.Spec.Replicas)
				case !autoscaling && (d.Spec.Replicas == nil || *d.Spec.Replicas != 3):
					t.Errorf("%s: replicas %v, want 3", s, d.Spec.Replicas)
				}
				sel := d.Spec.Selector.MatchLabels
				if sel["app.kubernetes.io/component"] != s || !subset(sel, d.Spec.Template.Labels) || !subset(sel, m.services[n].Spec.Selector) && !subset(m.services[n].Spec.Selector, sel) || !equalMaps(m.pdbs[n].Spec.Selector.MatchLabels, sel) {
					t.Errorf("%s: selectors of the Deployment, Service and PDB disagree", s)
				}
				if d.Spec.Template.Spec.ServiceAccountName != n {
					t.Errorf("%s: service account %q", s, d.Spec.Template.Spec.ServiceAccountName)
				}
				ports := map[string]int32{}
				for _, p := range m.services[n].Spec.Ports {
					ports[p.Name] = p.Port
				}
				if ports["http"] != 8080 || ports["ops"] != 9090 {
					t.Errorf("%s: service ports %v", s, ports)
				}
			}
			if len(m.deployments) != len(Services) {
				t.Errorf("%d deployments, want %d", len(m.deployments), len(Services))
			}
		})
	}
}

func TestChartPodsAreLockedDownProbedAndBounded(t *testing.T) {
	for setName, values := range valueSets {
		t.Run(setName, func(t *testing.T) {
			m := render(t, values)
			for name, d := range m.deployments {
				pod := d.Spec.Template.Spec
				psc := pod.SecurityContext
				if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
					psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: pod security context %+v", name, psc)
				}
				if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
					t.Errorf("%s: the service account token is mounted", name)
				}
				// Service links would inject QUARTERS_<SERVICE>_PORT and the
				// like, which read as Quarters settings.
				if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
					t.Errorf("%s: service links are on", name)
				}
				spread := false
				for _, c := range pod.TopologySpreadConstraints {
					if c.TopologyKey == "kubernetes.io/hostname" && c.LabelSelector != nil && equalMaps(c.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
						spread = true
					}
				}
				if !spread {
					t.Errorf("%s: no topology spread across nodes", name)
				}
				if len(pod.Containers) != 1 {
					t.Fatalf("%s: %d containers", name, len(pod.Containers))
				}
				c := pod.Containers[0]
				sc := c.SecurityContext
				if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
					sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
					sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
					sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 ||
					sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: container security context %+v", name, sc)
				}
				probe := func(p *corev1.Probe, path string) {
					if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port != intstr.FromString("ops") {
						t.Errorf("%s: probe %+v, want GET %s on the ops port", name, p, path)
					}
				}
				probe(c.LivenessProbe, "/healthz")
				probe(c.ReadinessProbe, "/readyz")
				containerPorts := map[string]int32{}
				for _, p := range c.Ports {
					containerPorts[p.Name] = p.ContainerPort
				}
				if containerPorts["http"] != 8080 || containerPorts["ops"] != 9090 {
					t.Errorf("%s: container ports %v", name, containerPorts)
				}
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
					if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
						t.Errorf("%s: %s request %s limit %s", name, r, req.String(), lim.String())
					}
				}
				env := envMap(c.Env)
				if env["QUARTERS_HTTP_ADDR"].Value != ":8080" || env["QUARTERS_OPS_ADDR"].Value != ":9090" {
					t.Errorf("%s: listen addresses %v %v", name, env["QUARTERS_HTTP_ADDR"], env["QUARTERS_OPS_ADDR"])
				}
				shutdown, err := time.ParseDuration(env["QUARTERS_SHUTDOWN_TIMEOUT"].Value)
				if err != nil {
					t.Errorf("%s: QUARTERS_SHUTDOWN_TIMEOUT: %v", name, err)
				}
				grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
				var preStop time.Duration
				if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
					preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
				}
				if grace <= shutdown+preStop {
					t.Errorf("%s: termination grace %s is not longer than the shutdown deadline %s after a %s preStop", name, grace, shutdown, preStop)
				}
				mounted := false
				for _, vm := range c.VolumeMounts {
					mounted = mounted || vm.MountPath == "/tmp"
				}
				if !mounted {
					t.Errorf("%s: no writable /tmp under the read-only root", name)
				}
			}
		})
	}
}

func envMap(env []corev1.EnvVar) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range env {
		out[e.Name] = e
	}
	return out
}

func TestChartWiresConfigurationAndSecrets(t *testing.T) {
	required := []string{"QUARTERS_MONGO_URI", "QUARTERS_REDIS_URL", "QUARTERS_KAFKA_BROKERS", "QUARTERS_ADMIN_TOKEN", "QUARTERS_SHUTDOWN_TIMEOUT", "QUARTERS_LOG_LEVEL"}
	secretVars := map[string]bool{"QUARTERS_MONGO_URI": true, "QUARTERS_REDIS_URL": true, "QUARTERS_ADMIN_TOKEN": true, "QUARTERS_SMTP_URL": true}
	for setName, values := range valueSets {
		t.Run(setName, func(t *testing.T) {
			m := render(t, values)
			for name, d := range m.deployments {
				env := envMap(d.Spec.Template.Spec.Containers[0].Env)
				for _, k := range required {
					if _, ok := env[k]; !ok {
						t.Errorf("%s: %s not set", name, k)
					}
				}
				for k, e := range env {
					if !strings.HasPrefix(k, "QUARTERS_") {
						t.Errorf("%s: variable %s is not a QUARTERS_ setting", name, k)
					}
					if secretVars[k] != (e.ValueFrom != nil) || (secretVars[k] && e.Value != "") {
						t.Errorf("%s: %s must come from a Secret exactly when it is secret: %+v", name, k, e)
					}
					if e.ValueFrom == nil {
						continue
					}
					ref := e.ValueFrom.SecretKeyRef
					if ref == nil {
						t.Errorf("%s: %s from %+v", name, k, e.ValueFrom)
						continue
					}
					if sec := m.secrets[ref.Name]; sec != nil {
						if _, ok := sec.StringData[ref.Key]; !ok {
							t.Errorf("%s: %s refers to key %q missing from Secret %s", name, k, ref.Key, ref.Name)
						}
					} else if setName != "existing secrets" {
						t.Errorf("%s: %s refers to Secret %s, which the chart does not create", name, k, ref.Name)
					}
				}
				_, smtp := env["QUARTERS_SMTP_URL"]
				_, dash := env["QUARTERS_DASHBOARD_URL"]
				_, prefix := env["QUARTERS_WEBHOOK_HEADER_PREFIX"]
				if smtp != (name == objName("bookings")) || dash != (name == objName("bookings")) || prefix != (name == objName("webhook-dispatcher")) {
					t.Errorf("%s: service-specific variables smtp=%v dashboard=%v header-prefix=%v", name, smtp, dash, prefix)
				}
				_, otlp := env["QUARTERS_OTLP_ENDPOINT"]
				if otlp != (setName == "everything on") {
					t.Errorf("%s: QUARTERS_OTLP_ENDPOINT set %v", name, otlp)
				}
			}
			switch setName {
			case "existing secrets":
				if len(m.secrets) != 0 {
					t.Errorf("the chart creates Secrets %v although every value comes from an existing one", keys(m.secrets))
				}
				refs := map[string]string{}
				for _, e := range m.deployments[objName("bookings")].Spec.Template.Spec.Containers[0].Env {
					if e.ValueFrom != nil {
						refs[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
					}
				}
				want := map[string]string{"QUARTERS_MONGO_URI": "managed-mongo/uri", "QUARTERS_REDIS_URL": "managed-redis/url", "QUARTERS_SMTP_URL": "relay/smtp", "QUARTERS_ADMIN_TOKEN": "quarters-admin/token"}
				if !equalMaps(refs, want) {
					t.Errorf("secret references %v, want %v", refs, want)
				}
			case "everything on":
				sec := m.secrets[release+"-quarters"]
				if sec == nil || sec.StringData["admin-token"] != "an-admin-token-for-tests" || sec.StringData["mongo-uri"] == "" {
					t.Errorf("chart Secret %+v", sec)
				}
			case "defaults":
				sec := m.secrets[release+"-quarters"]
				if sec == nil || len(sec.StringData["admin-token"]) < 32 {
					t.Errorf("no generated admin token: %+v", sec)
				}
			}
		})
	}
}

func TestChartRefusesMisspeltOrMissingValues(t *testing.T) {
	for name, values := range map[string]string{
		"top-level typo":        "ingres: {enabled: true}\n",
		"service typo":          "services:\n  auth:\n    replica: 3\n",
		"unknown service":       "services:\n  payments:\n    enabled: true\n",
		"autoscaling typo":      "services:\n  catalog:\n    autoscaling: {enable: false}\n",
		"env not QUARTERS_":     "services:\n  auth:\n    env: {GODEBUG: x}\n",
		"bad log level":         "global: {logLevel: verbose}\n",
		"no mongo at all":       "mongo: {uri: \"\"}\n",
		"secret key left empty": "redis:\n  existingSecret: {name: r, key: \"\"}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := renderChart(t, values); err == nil {
				t.Errorf("rendered with %q", values)
			}
		})
	}
}

func TestChartIngressIsTheRoutingTable(t *testing.T) {
	if !bytes.Equal(mustRead(t, repoPath(t, "charts", "quarters", "routes.yaml")), routes.YAML()) {
		t.Fatal("charts/quarters/routes.yaml differs from pkg/routes/routes.yaml: copy it over")
	}
	table, err := routes.Default(false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, r := range table.Routes() {
		kind := "api"
		if strings.HasPrefix(r.Path, "/admin/") {
			kind = "admin"
		}
		want[kind] = append(want[kind], r.Regex()+" -> "+objName(r.Service))
	}

	m := render(t, valueSets["admin ingress on"])
	for kind, host := range map[string]string{"api": "api.quarters.example.com", "admin": "admin.quarters.example.com"} {
		ing := m.ingresses[release+"-quarters-"+kind]
		if ing == nil {
			t.Fatalf("no %s Ingress", kind)
		}
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" || ing.Annotations["nginx.ingress.kubernetes.io/use-regex"] != "true" {
			t.Errorf("%s: class %v annotations %v", kind, ing.Spec.IngressClassName, ing.Annotations)
		}
		if len(ing.Spec.TLS) != 1 || len(ing.Spec.TLS[0].Hosts) != 1 || ing.Spec.TLS[0].Hosts[0] != host || ing.Spec.TLS[0].SecretName == "" {
			t.Errorf("%s: TLS %+v", kind, ing.Spec.TLS)
		}
		if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != host {
			t.Fatalf("%s: rules %+v", kind, ing.Spec.Rules)
		}
		var got []string
		for _, p := range ing.Spec.Rules[0].HTTP.Paths {
			if p.PathType == nil || *p.PathType != networkingv1.PathTypeImplementationSpecific || p.Backend.Service == nil || p.Backend.Service.Port.Name != "http" {
				t.Errorf("%s: path %+v", kind, p)
				continue
			}
			if _, err := regexp.Compile(p.Path); err != nil {
				t.Errorf("%s: %q is not a regular expression: %v", kind, p.Path, err)
			}
			got = append(got, p.Path+" -> "+p.Backend.Service.Name)
		}
		// Same routes, same order (deepest first, as ingress-nginx needs),
		// nothing else.
		if strings.Join(got, "\n") != strings.Join(want[kind], "\n") {
			t.Errorf("%s Ingress paths:\n%s\nwant (routing table without dev-only routes):\n%s", kind, strings.Join(got, "\n"), strings.Join(want[kind], "\n"))
		}
	}

	// The admin Ingress is off by default; the public one has no admin path.
	d := render(t, "")
	if _, ok := d.ingresses[release+"-quarters-admin"]; ok || len(d.ingresses) != 1 {
		t.Errorf("default ingresses: %v", keys(d.ingresses))
	}
	dev := render(t, string(mustRead(t, repoPath(t, "deploy", "values-dev.yaml"))))
	for _, ing := range dev.ingresses {
		if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "" || len(ing.Spec.TLS) != 0 {
			t.Errorf("dev Ingress %s: want any host without TLS: %+v", ing.Name, ing.Spec)
		}
	}
	if len(dev.ingresses) != 2 {
		t.Errorf("dev ingresses %v, want api and admin", keys(dev.ingresses))
	}
	className := render(t, "ingress: {className: traefik, tls: {enabled: false, secretName: x}}\n").ingresses[release+"-quarters-api"]
	if *className.Spec.IngressClassName != "traefik" || len(className.Spec.TLS) != 0 {
		t.Errorf("ingress class and TLS not configurable: %+v", className.Spec)
	}
}

func TestChartNetworkPolicies(t *testing.T) {
	m := render(t, "")
	base := m.netpols[release+"-quarters"]
	if base == nil {
		t.Fatalf("network policies %v", keys(m.netpols))
	}
	if !equalMaps(base.Spec.PodSelector.MatchLabels, map[string]string{"app.kubernetes.io/name": "quarters", "app.kubernetes.io/instance": release}) {
		t.Errorf("base policy selects %v", base.Spec.PodSelector.MatchLabels)
	}
	if len(base.Spec.PolicyTypes) != 2 {
		t.Errorf("policy types %v", base.Spec.PolicyTypes)
	}
	// Only the ingress controller reaches http, only Prometheus reaches ops.
	from := map[string]string{}
	for _, r := range base.Spec.Ingress {
		if len(r.Ports) != 1 || len(r.From) != 1 || r.From[0].PodSelector == nil || r.From[0].NamespaceSelector == nil {
			t.Errorf("ingress rule %+v", r)
			continue
		}
		from[r.Ports[0].Port.String()] = r.From[0].PodSelector.MatchLabels["app.kubernetes.io/name"]
	}
	if !equalMaps(from, map[string]string{"http": "ingress-nginx", "ops": "prometheus"}) {
		t.Errorf("who reaches which port: %v", from)
	}
	egressPorts := map[int32]bool{}
	for _, r := range base.Spec.Egress {
		for _, p := range r.Ports {
			egressPorts[p.Port.IntVal] = true
		}
	}
	for _, p := range []int32{53, 27017, 9092, 6379} {
		if !egressPorts[p] {
			t.Errorf("no egress on port %d", p)
		}
	}
	if egressPorts[443] {
		t.Error("every pod may reach port 443")
	}
	wd := m.netpols[objName("webhook-dispatcher")+"-egress"]
	if wd == nil || wd.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"] != "webhook-dispatcher" ||
		len(wd.Spec.Egress) != 1 || wd.Spec.Egress[0].Ports[0].Port.IntVal != 443 || wd.Spec.Egress[0].To[0].IPBlock == nil ||
		!contains(wd.Spec.Egress[0].To[0].IPBlock.Except, "169.254.0.0/16") {
		t.Errorf("dispatcher egress policy %+v", wd)
	}
	if off := render(t, "networkPolicy: {enabled: false}\n"); len(off.netpols) != 0 {
		t.Errorf("policies rendered while off: %v", keys(off.netpols))
	}
}

func TestChartMonitoringToggles(t *testing.T) {
	off := render(t, "")
	if len(off.serviceMonitors)+len(off.rules)+len(off.configMaps) != 0 {
		t.Errorf("monitoring objects rendered by default")
	}
	on := render(t, valueSets["everything on"])
	sm := on.serviceMonitors[release+"-quarters"]
	if sm == nil || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "ops" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("ServiceMonitor %+v", sm)
	}
	relabelsService := false
	for _, r := range sm.Spec.Endpoints[0].Relabelings {
		relabelsService = relabelsService || r.TargetLabel == "service" && contains(r.SourceLabels, "__meta_kubernetes_service_label_app_kubernetes_io_component")
	}
	if !relabelsService {
		t.Error("the ServiceMonitor does not label series with the service name the rules use")
	}
	// The ServiceMonitor's selector picks every Service of the chart.
	for _, s := range Services {
		if !subset(sm.Spec.Selector.MatchLabels, on.services[objName(s)].Labels) {
			t.Errorf("ServiceMonitor does not select %s", s)
		}
	}
	rule := on.rules[release+"-quarters"]
	fileRules := mustRead(t, repoPath(t, "deploy", "observability", "quarters-alerts.yaml"))
	var want PrometheusRuleSpec
	if err := decodeStrict(string(fileRules), &want); err != nil {
		t.Fatal(err)
	}
	if rule == nil || !jsonEqual(rule.Spec, want) {
		t.Errorf("PrometheusRule does not carry deploy/observability/quarters-alerts.yaml")
	}
	cm := on.configMaps[release+"-quarters-dashboard"]
	dash := mustRead(t, repoPath(t, "deploy", "observability", "quarters-dashboard.json"))
	if cm == nil || cm.Labels["grafana_dashboard"] != "1" || strings.TrimSpace(cm.Data["quarters.json"]) != strings.TrimSpace(string(dash)) {
		t.Errorf("dashboard ConfigMap does not carry deploy/observability/quarters-dashboard.json")
	}
	for _, f := range []string{"quarters-alerts.yaml", "quarters-dashboard.json"} {
		if !bytes.Equal(mustRead(t, repoPath(t, "charts", "quarters", "files", f)), mustRead(t, repoPath(t, "deploy", "observability", f))) {
			t.Errorf("charts/quarters/files/%s differs from deploy/observability/%s: copy it over", f, f)
		}
	}
}

func TestChartNotesTellHowToGetAToken(t *testing.T) {
	m := render(t, "")
	for _, want := range []string{"kubectl -n quarters get secret " + release + "-quarters", "/admin/v1/orgs", "/credentials", "grant_type=client_credentials", "https://api.quarters.example.com/api/v1/oauth2/token", "port-forward"} {
		if !strings.Contains(m.notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, m.notes)
		}
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func subset(small, big map[string]string) bool {
	for k, v := range small {
		if big[k] != v {
			return false
		}
	}
	return len(small) > 0
}

func equalMaps(a, b map[string]string) bool { return subset(a, b) && subset(b, a) }

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
