package archfilter

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/registryclient"
)

// newRegistryDeps builds what talks to registries from args
// (pkg/registryclient, shared with the placement controller): the resolver
// and its worker pool (stopped with ctx) and the informer-backed credentials.
func newRegistryDeps(ctx context.Context, args *config.ArchFilterArgs, h fwk.Handle) (deps, error) {
	c, err := registryclient.New(ctx, args, h.ClientSet(), h.SharedInformerFactory())
	if err != nil {
		return deps{}, err
	}
	return deps{resolver: c.Resolver, credentials: c.Credentials}, nil
}
