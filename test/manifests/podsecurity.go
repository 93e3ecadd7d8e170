package manifests

import (
	"fmt"
	"slices"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/archfilter/archfilter/test/manifests/podsecurity"
)

// OverlayWorkloads are the workloads each kustomization renders (the base
// and every overlay under manifests/overlays).
var OverlayWorkloads = map[string][]string{
	"manifests/base":               {"Deployment kube-system/archfilter-scheduler"},
	SecondaryOverlay:               {"Deployment kube-system/archfilter-scheduler"},
	SecondaryK8s135Overlay:         {"Deployment kube-system/archfilter-scheduler"},
	KubeadmOverlay:                 nil,
	"manifests/overlays/placement": {"Deployment kube-system/archfilter-placement"},
	HealOverlay:                    {"Deployment kube-system/archfilter-heal", "Deployment kube-system/archfilter-scheduler"},
}

// CheckPodSecurity checks that objs hold exactly the workloads want, that
// each passes podsecurity.Check, and that the check fails on each of its
// mutations (so it is known to see every container).
func CheckPodSecurity(objs []k8sruntime.Object, want []string) error {
	var got []string
	for _, w := range podsecurity.Workloads(objs) {
		got = append(got, w.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("workloads %v, want %v", got, want)
	}
	if err := podsecurity.Check(objs, podsecurity.Exceptions{}); err != nil {
		return err
	}
	if len(want) == 0 {
		return nil
	}
	return podsecurity.CheckMutations(objs, podsecurity.Exceptions{})
}
