package main

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The ConfigMap the chart and kustomize install the scheduler's configuration
// in, with the label kubectl archfilter finds it by
// (internal/kubectlplugin.ConfigLabel; the plugin is not imported here to keep
// this helper's build small).
const (
	configNamespace      = "kube-system"
	configName           = "archfilter-scheduler-config"
	configLabel          = "archfilter.io/config"
	configLabelScheduler = "scheduler"
)

// publishConfig puts the KubeSchedulerConfiguration at path, the one
// archfilter's scheduler runs with, into the cluster as a deployed archfilter
// keeps it: kubectl archfilter then decides as the cluster does (which
// scheduler names run ArchFilter, the registries' settings) without flags.
func publishConfig(ctx context.Context, cs kubernetes.Interface, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("the scheduler's configuration: %w", err)
	}
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: configNamespace,
			Name:      configName,
			Labels:    map[string]string{"app.kubernetes.io/name": "archfilter-scheduler", configLabel: configLabelScheduler},
		},
		Data: map[string]string{"config.yaml": string(data)},
	}
	cms := cs.CoreV1().ConfigMaps(configNamespace)
	_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %w", configNamespace, configName, err)
	}
	return nil
}
