package archfilter

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// verdict is what the cache says about a pod's images at one moment.
type verdict struct {
	// set is the intersection of the platforms of every image that resolved.
	set platform.Set
	// declared is true when the pod's annotation gave the set.
	declared bool
	// pending are images without any answer yet.
	pending []string
	// failures are images whose resolution failed.
	failures []error
}

// evaluate reads the resolver cache (memory only) for every image of pod.
func (pl *ArchFilter) evaluate(pod *v1.Pod) (verdict, error) {
	if value, ok := pod.Annotations[annotations.Platforms]; ok {
		set, err := platform.ParseList(value)
		if err != nil {
			return verdict{}, fmt.Errorf("annotation %s: %w", annotations.Platforms, err)
		}
		return verdict{set: pl.settings.compat.Expand(set), declared: true}, nil
	}
	v := verdict{set: platform.Any()}
	creds := pl.credentials.ForPod(pod)
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		image := img.Reference
		res, ok := pl.resolver.Lookup(request(image, creds))
		switch {
		case !ok:
			v.pending = append(v.pending, image)
		case res.Err != nil:
			v.failures = append(v.failures, res.Err)
		default:
			v.set = v.set.Intersect(pl.settings.compat.Expand(res.Platforms))
		}
		return true
	})
	return v, nil
}

// allKnown reports whether every image of pod has a cached answer (success or
// failure). It is PreEnqueue's fast path and does not allocate beyond what the
// credential source does.
func (pl *ArchFilter) allKnown(pod *v1.Pod, creds resolver.Credentials) bool {
	known := true
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		image := img.Reference
		_, known = pl.resolver.Lookup(request(image, creds))
		return known
	})
	return known
}

// failureSummary describes failures for a person: image, registry, credential
// source and status, as the resolver's errors carry them.
func failureSummary(errs []error) string {
	msgs := make([]string, 0, len(errs))
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	return strings.Join(msgs, "; ")
}
