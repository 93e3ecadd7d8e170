package archfilter

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// newRegistryDeps builds the registry resolver and credential store from args.
// TODO(wiring): replace with pkg/resolver and pkg/resolver/credentials once they land.
func newRegistryDeps(_ context.Context, _ *config.ArchFilterArgs, _ framework.Handle) (deps, error) {
	return deps{resolver: unwiredResolver{}, credentials: noCredentials{}}, nil
}

type unwiredResolver struct{}

var errUnwired = &resolver.Error{Reason: resolver.ReasonUnreachable, CredentialSource: "anonymous", Err: errors.New("registry resolver not configured")}

func (unwiredResolver) Lookup(req resolver.Request) (resolver.Result, bool) {
	return resolver.Result{Err: errUnwired}, true
}
func (unwiredResolver) ResolveAsync(req resolver.Request, done func(resolver.Result)) {
	go done(resolver.Result{Err: errUnwired})
}
func (unwiredResolver) Resolve(context.Context, resolver.Request) resolver.Result {
	return resolver.Result{Err: errUnwired}
}

type noCredentials struct{}

func (noCredentials) ForPod(*v1.Pod) resolver.Credentials { return nil }
