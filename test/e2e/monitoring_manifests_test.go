package e2e

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/manifests"
)

const monitoringDir = "manifests/monitoring"

// TestManifestsMonitoring renders manifests/monitoring with kustomize (what
// `kubectl apply -k manifests/monitoring` applies) and checks its output:
// the Prometheus Operator objects decode strictly, everything is labelled
// part of archfilter and lives in kube-system, the dashboard ConfigMap holds
// grafana-dashboard.json as is and is labelled for Grafana's sidecar, and the
// ServiceMonitor selects the secondary overlay's metrics Service and port.
func TestManifestsMonitoring(t *testing.T) {
	out, err := runKustomize(t, monitoringDir)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifests.Documents(out)
	if err != nil {
		t.Fatal(err)
	}
	var monitor *manifests.ServiceMonitor
	var rule *manifests.PrometheusRule
	var dashboards []*corev1.ConfigMap
	kinds := map[string]int{}
	for i, doc := range docs {
		tm, err := manifests.Kind(doc)
		if err != nil {
			t.Fatal(err)
		}
		kinds[tm.Kind]++
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Metadata.Labels["app.kubernetes.io/part-of"] != "archfilter" {
			t.Errorf("document %d (%s %s): no label app.kubernetes.io/part-of=archfilter", i+1, tm.Kind, meta.Metadata.Name)
		}
		switch tm.Kind {
		case "PrometheusRule", "ServiceMonitor":
			if err := manifests.DecodeMonitoring(doc); err != nil {
				t.Fatalf("document %d: %v", i+1, err)
			}
			if meta.Metadata.Namespace != manifests.Namespace {
				t.Errorf("%s %s: namespace %q, want %s", tm.Kind, meta.Metadata.Name, meta.Metadata.Namespace, manifests.Namespace)
			}
			if tm.Kind == "PrometheusRule" {
				rule = &manifests.PrometheusRule{}
				if err := yaml.UnmarshalStrict(doc, rule); err != nil {
					t.Fatal(err)
				}
			}
			if tm.Kind == "ServiceMonitor" {
				monitor = &manifests.ServiceMonitor{}
				if err := yaml.UnmarshalStrict(doc, monitor); err != nil {
					t.Fatal(err)
				}
			}
		default:
			objs, err := manifests.Decode(doc)
			if err != nil {
				t.Fatalf("document %d: %v", i+1, err)
			}
			if cm, ok := objs[0].(*corev1.ConfigMap); ok {
				dashboards = append(dashboards, cm)
			}
		}
	}
	if want := map[string]int{"PrometheusRule": 1, "ServiceMonitor": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "ConfigMap": 1}; !maps.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	cm := dashboards[0]
	if cm.Namespace != manifests.Namespace || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap %s/%s labels %v: want kube-system and grafana_dashboard=1", cm.Namespace, cm.Name, cm.Labels)
	}
	if got, want := cm.Data["grafana-dashboard.json"], repoFile(t, monitoringDir+"/grafana-dashboard.json"); !bytes.Equal([]byte(got), want) || !json.Valid(want) {
		t.Errorf("ConfigMap %s does not hold grafana-dashboard.json as is (or it is not JSON)", cm.Name)
	}

	// Every group's alerts: the scheduler's, the placement mode's, and the
	// misplaced-pod watch's (the placement or the heal-only companion).
	alerts := map[string][]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts[g.Name] = append(alerts[g.Name], r.Alert)
		}
	}
	if got, want := alerts["archfilter-misplaced"], []string{"ArchFilterMisplacedPods", "ArchFilterMisplacedEvictionsFailing", "ArchFilterMisplacedNotEvictable"}; !slices.Equal(got, want) {
		t.Errorf("group archfilter-misplaced: alerts %v, want %v", got, want)
	}
	for _, g := range []string{"archfilter", "archfilter-placement"} {
		if len(alerts[g]) == 0 {
			t.Errorf("no alerts in group %s", g)
		}
	}

	// The ServiceMonitor finds the metrics Service of the secondary overlay.
	_, objs := render(t, manifests.SecondaryOverlay)
	var service *corev1.Service
	for _, s := range manifests.Of[*corev1.Service](objs) {
		if s.Name == manifests.MetricsService {
			service = s
		}
	}
	if service == nil || monitor == nil {
		t.Fatalf("Service %s %v, ServiceMonitor %v", manifests.MetricsService, service, monitor)
	}
	sel, err := metav1.LabelSelectorAsSelector(&monitor.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(service.Labels)) {
		t.Errorf("the ServiceMonitor's selector %v does not select Service %s (labels %v)", monitor.Spec.Selector, service.Name, service.Labels)
	}
	for _, e := range monitor.Spec.Endpoints {
		found := false
		for _, p := range service.Spec.Ports {
			found = found || p.Name == e.Port
		}
		if !found {
			t.Errorf("ServiceMonitor endpoint port %q is not a port of Service %s", e.Port, service.Name)
		}
	}
}
