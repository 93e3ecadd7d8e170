package kubectlplugin

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/argsfile"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
)

const schedulerConfigYAML = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: archfilter-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: ArchFilter
  pluginConfig:
  - name: ArchFilter
    args:
      failurePolicy: Fail
      policies:
        allowedOverrides: [preferredPlatforms]
- schedulerName: stock
- schedulerName: second
  plugins:
    preFilter:
      enabled:
      - name: ArchFilter
`

func configMap(ns, name, kind, key, data string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ConfigLabel: kind}}, Data: map[string]string{key: data}}
}

// TestFindClusterConfig: the scheduler's configuration is found by its label,
// before the placement mode's; its ArchFilter args parse as the plugin's, and
// the profiles that run ArchFilter name the schedulers.
func TestFindClusterConfig(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(
		configMap("archfilter-system", "archfilter-placement-args", ConfigLabelPlacement, "args.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\nfailurePolicy: Ignore\n"),
		configMap("kube-system", "archfilter-scheduler-config", ConfigLabelScheduler, "config.yaml", schedulerConfigYAML),
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "unrelated"}},
	)
	found, err := findClusterConfig(ctx, client)
	if err != nil || found == nil {
		t.Fatalf("findClusterConfig = %+v, %v", found, err)
	}
	if !strings.Contains(found.source, "kube-system/archfilter-scheduler-config") {
		t.Errorf("source %q, want the scheduler's ConfigMap", found.source)
	}
	if strings.Join(found.schedulers, ",") != "archfilter-scheduler,second" {
		t.Errorf("schedulers %v", found.schedulers)
	}
	args, err := argsfile.Parse("test", found.source, found.args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if args.FailurePolicy != config.FailurePolicyFail || len(args.Policies.AllowedOverrides) != 1 || !args.Policies.Enabled {
		t.Errorf("args %+v", args)
	}

	placementOnly := fake.NewClientset(configMap("archfilter-system", "args", ConfigLabelPlacement, "args.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\n"))
	if found, err := findClusterConfig(ctx, placementOnly); err != nil || found == nil || len(found.schedulers) != 0 {
		t.Errorf("placement only: %+v, %v", found, err)
	}
	if found, err := findClusterConfig(ctx, fake.NewClientset()); err != nil || found != nil {
		t.Errorf("nothing deployed: %+v, %v", found, err)
	}
	broken := fake.NewClientset(configMap("kube-system", "c", ConfigLabelScheduler, "config.yaml", "profiles: [\n"))
	if _, err := findClusterConfig(ctx, broken); err == nil || !strings.Contains(err.Error(), "kube-system/c") {
		t.Errorf("a broken configuration: %v, want an error naming it", err)
	}
}

// TestFilePolicies: check -f reads policies among its files; one without a
// namespace governs the workloads without one.
func TestFilePolicies(t *testing.T) {
	lookup, errs := filePolicies([]*policyv1alpha1.ArchFilterPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "arm"}, Spec: policyv1alpha1.ArchFilterPolicySpec{AllowedPlatforms: []string{"linux/arm64"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "team"}, Spec: policyv1alpha1.ArchFilterPolicySpec{AllowedPlatforms: []string{"arm64"}}},
	}, "")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "team/bad") {
		t.Errorf("errors %v, want one naming team/bad", errs)
	}
	if ps := lookup(""); len(ps) != 1 || ps[0].Name != "arm" {
		t.Errorf("policies without a namespace: %v", ps)
	}
}
