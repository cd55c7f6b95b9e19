package deploycheck

import (
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestDevDependencies renders deploy/dev-deps strictly and checks that it
// provides what the chart's defaults point at: a MongoDB replica set, a
// KRaft Kafka broker, Redis and an SMTP sink.
func TestDevDependencies(t *testing.T) {
	ch, err := loader.Load(repoPath(t, "deploy", "dev-deps"))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, map[string]any{}, chartutil.ReleaseOptions{Name: "quarters-dev-deps", Namespace: "quarters", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	services := map[string]*corev1.Service{}
	pods := map[string]corev1.PodSpec{}
	for name, content := range files {
		for _, doc := range splitYAML(content) {
			var head struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			switch head.Kind {
			case "Service":
				s := new(corev1.Service)
				mustDecode(t, doc, s)
				services[s.Name] = s
			case "StatefulSet":
				s := new(appsv1.StatefulSet)
				mustDecode(t, doc, s)
				pods[s.Name] = s.Spec.Template.Spec
			case "Deployment":
				d := new(appsv1.Deployment)
				mustDecode(t, doc, d)
				pods[d.Name] = d.Spec.Template.Spec
			default:
				t.Errorf("%s: unexpected kind %s", name, head.Kind)
			}
		}
	}
	// The chart's defaults: mongo, redis and smtp URLs, and the Kafka brokers.
	m := render(t, "")
	sec := m.secrets[release+"-quarters"]
	targets := map[string]string{
		"quarters-mongo": sec.StringData["mongo-uri"],
		"quarters-redis": sec.StringData["redis-url"],
		"quarters-mail":  sec.StringData["smtp-url"],
		"quarters-kafka": envMap(m.deployments[objName("auth")].Spec.Template.Spec.Containers[0].Env)["QUARTERS_KAFKA_BROKERS"].Value,
	}
	ports := map[string]int32{"quarters-mongo": 27017, "quarters-redis": 6379, "quarters-mail": 1025, "quarters-kafka": 9092}
	for name, target := range targets {
		s := services[name]
		if s == nil || pods[name].Containers == nil {
			t.Errorf("no Service and workload %s", name)
			continue
		}
		if !strings.Contains(target, name) || !strings.Contains(target, fmt.Sprintf(":%d", ports[name])) {
			t.Errorf("the chart's default %q does not point at %s:%d", target, name, ports[name])
		}
		found := false
		for _, p := range s.Spec.Ports {
			found = found || p.Port == ports[name]
		}
		if !found {
			t.Errorf("%s does not serve port %d", name, ports[name])
		}
		if s.Labels["app.kubernetes.io/part-of"] != "quarters-dev-deps" {
			t.Errorf("%s lacks the label the chart's default NetworkPolicy egress selects", name)
		}
		if p := pods[name]; p.EnableServiceLinks == nil || *p.EnableServiceLinks {
			t.Errorf("%s: service links on", name)
		}
	}
	if !strings.Contains(targets["quarters-mongo"], "replicaSet=rs0") || !strings.Contains(strings.Join(pods["quarters-mongo"].Containers[0].Args, " "), "--replSet rs0") {
		t.Error("MongoDB is not a replica set rs0")
	}
	if !services["quarters-mongo"].Spec.PublishNotReadyAddresses || services["quarters-mongo"].Spec.ClusterIP != "None" {
		t.Error("the replica set member's address must resolve before it is ready (headless, not-ready addresses published)")
	}
	kafka := envMap(pods["quarters-kafka"].Containers[0].Env)
	if kafka["KAFKA_PROCESS_ROLES"].Value != "broker,controller" || kafka["KAFKA_ADVERTISED_LISTENERS"].Value != "PLAINTEXT://"+targets["quarters-kafka"] {
		t.Errorf("Kafka is not one KRaft node advertising %s: %v", targets["quarters-kafka"], kafka)
	}
}

func mustDecode(t *testing.T, doc string, v any) {
	t.Helper()
	if err := decodeStrict(doc, v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}
