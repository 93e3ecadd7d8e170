package archfilter

import (
	"context"
	"fmt"

	"k8s.io/client-go/dynamic"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/apis/config"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/policystore"
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
	d := deps{resolver: c.Resolver, credentials: c.Credentials}
	if args.Policies.Enabled && h.KubeConfig() != nil {
		client, err := dynamic.NewForConfig(h.KubeConfig())
		if err != nil {
			return deps{}, fmt.Errorf("a client for %s: %w", policyv1alpha1.SchemeGroupResource, err)
		}
		d.policies, d.policyClient = policystore.New(), client
		d.policiesWatched = policystore.Start(ctx, client, d.policies, policystore.Options{})
	}
	return d, nil
}
