package archfilter

import (
	"cmp"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/schedfw"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/credentials"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

// newRegistryDeps builds what talks to registries from args: the transport
// (TLS, mirrors, address and host policy, rate limits, breakers), the resolver
// and its worker pool (stopped with ctx), and the informer-backed credentials.
func newRegistryDeps(ctx context.Context, args *config.ArchFilterArgs, h schedfw.Handle) (deps, error) {
	registries := make([]transport.Registry, 0, len(args.Registries))
	for _, r := range args.Registries {
		registries = append(registries, transport.Registry{Host: r.Host, Insecure: r.Insecure, CAFile: r.CAFile, Mirrors: r.Mirrors})
	}
	tr, err := transport.New(transport.Options{
		Registries: registries,
		Allowed:    args.AllowedRegistries,
		Denied:     args.DeniedRegistries,
	})
	if err != nil {
		return deps{}, fmt.Errorf("args: %w", err)
	}
	r, err := resolver.New(resolver.Options{
		Workers:        int(args.Workers),
		ResolveTimeout: args.ResolveTimeout.Duration,
		Cache: resolver.CacheOptions{
			MaxEntries:  int(args.Cache.MaxEntries),
			TagTTL:      args.Cache.TagTTL.Duration,
			DigestTTL:   args.Cache.DigestTTL.Duration,
			NegativeTTL: args.Cache.NegativeTTL.Duration,
			// The resolver reads zero as its default; the args' zero is "off".
			StaleWhileRevalidate: cmp.Or(args.Cache.StaleWhileRevalidate.Duration, -1),
		},
		Transport: tr.RoundTripper(),
		Endpoints: tr.Endpoints,
	})
	if err != nil {
		return deps{}, err
	}
	resolver.RegisterMetrics()
	transport.RegisterMetrics()
	go r.Run(ctx)

	opts := credentials.Options{
		DockerConfigFile:         args.DockerConfigFile,
		CredentialProviderConfig: args.CredentialProviderConfig,
		CredentialProviderBinDir: args.CredentialProviderBinDir,
	}
	if s := args.GlobalPullSecret; s != nil {
		opts.GlobalPullSecret = &types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	}
	store, err := credentials.NewStore(h.SharedInformerFactory(), opts)
	if err != nil {
		return deps{}, fmt.Errorf("args credentials: %w", err)
	}
	return deps{resolver: r, credentials: store}, nil
}
