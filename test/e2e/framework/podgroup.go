package framework

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/client-go/kubernetes"
)

// PodGroupVersion is the group/version of the PodGroups the main line's
// kube-scheduler reads for Kubernetes' gang scheduling: from 1.37 the Workload
// API's v1beta1 (the GenericWorkload gate, beta and off by default, and
// --runtime-config=scheduling.k8s.io/v1beta1=true on the API server; 1.36's
// v1alpha2 and its GangScheduling gate are gone).
//
// PodGroups are written as JSON through the REST client rather than with the
// typed client: the k8s1.35 flavour's k8s.io/api has no scheduling/v1beta1, and
// `go mod tidy` of its module file reads every test package whatever its build
// tags.
const PodGroupVersion = "scheduling.k8s.io/v1beta1"

// ServesPodGroups reports whether the API server serves PodGroupVersion's
// podgroups (alpha APIs are off unless the API server enables them).
func ServesPodGroups(cs kubernetes.Interface) bool {
	resources, err := cs.Discovery().ServerResourcesForGroupVersion(PodGroupVersion)
	if err != nil || resources == nil {
		return false
	}
	for _, r := range resources.APIResources {
		if r.Name == "podgroups" {
			return true
		}
	}
	return false
}

// CreateGangPodGroup creates a PodGroup whose gang policy needs minCount
// members; pods join it with spec.schedulingGroup.podGroupName.
func CreateGangPodGroup(ctx context.Context, cs kubernetes.Interface, ns, name string, minCount int32) error {
	body, err := json.Marshal(map[string]any{
		"apiVersion": PodGroupVersion,
		"kind":       "PodGroup",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": minCount}},
		},
	})
	if err != nil {
		return err
	}
	err = cs.Discovery().RESTClient().Post().
		AbsPath("/apis", PodGroupVersion, "namespaces", ns, "podgroups").
		SetHeader("Content-Type", "application/json").
		Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("PodGroup %s/%s (%s): %w", ns, name, PodGroupVersion, err)
	}
	return nil
}
