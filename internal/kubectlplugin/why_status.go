package kubectlplugin

import "fmt"

// whyStatus is why's exit status (root.go): ExitInputError when an image of the pod
// could not be resolved, since where it runs is then unknown; ExitFailed when the pod runs
// nowhere: no platform is left, or the cluster has nodes and none of them runs it.
func whyStatus(v *whyView) error {
	pod := v.Namespace + "/" + v.Name
	if unresolved := len(v.unresolved()); unresolved > 0 {
		return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("pod %s: %d of %d images could not be resolved", pod, unresolved, len(v.Images))}
	}
	if v.allowed.IsEmpty() {
		return &ExitError{Code: ExitFailed, Msg: fmt.Sprintf("pod %s cannot run: no platform is left", pod)}
	}
	for _, g := range v.Nodes {
		if g.CanRun {
			return nil
		}
	}
	if len(v.Nodes) > 0 {
		return &ExitError{Code: ExitFailed, Msg: fmt.Sprintf("pod %s runs on none of the cluster's nodes", pod)}
	}
	return nil
}
