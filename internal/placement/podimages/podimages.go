// Package podimages resolves the images of one pod for the placement
// companion's controllers (the gate's and the misplaced pods' watch): it asks
// the resolver, with the pod's credentials, and hands the answers to package
// decision as a memory-only lookup.
package podimages

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Credentials gives the credentials a pod's images may be pulled with.
type Credentials interface {
	ForPod(pod *v1.Pod) resolver.Credentials
}

// Resolver resolves one image (pkg/resolver.Resolver).
type Resolver interface {
	Resolve(ctx context.Context, req resolver.Request) resolver.Result
}

// Resolve asks r for the platforms of every image of pod, within ctx, and
// returns the answers as a lookup. The resolver caches its answers: a pod
// whose images are known costs no registry request.
func Resolve(ctx context.Context, r Resolver, c Credentials, pod *v1.Pod) decision.Lookup {
	return ResolveRefs(ctx, r, c, pod, podplatform.Images(pod))
}

// ResolveRefs is Resolve for the references refs, with pod's credentials (the
// misplaced-pod watch adds the digests the pod's containers run).
func ResolveRefs(ctx context.Context, r Resolver, c Credentials, pod *v1.Pod, refs []string) decision.Lookup {
	creds := c.ForPod(pod)
	results := map[string]resolver.Result{}
	for _, image := range refs {
		results[image] = r.Resolve(ctx, resolver.Request{Image: image, Credentials: creds})
	}
	return Lookup(results)
}

// Lookup answers from results; an image not in it is unknown.
func Lookup(results map[string]resolver.Result) decision.Lookup {
	return func(image string) (resolver.Result, bool) {
		res, ok := results[image]
		return res, ok
	}
}
