// Package registryclient builds, from ArchFilterArgs, everything that talks to
// registries: the transport (TLS, mirrors, address and host policy, rate
// limits, breakers), the resolver with its worker pool and cache, and the
// informer-backed credentials. The scheduler plugin and the placement
// controller both build theirs here, so they resolve images identically.
package registryclient

import (
	"cmp"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/credentials"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

// Client is one process's resolver and credentials.
type Client struct {
	Resolver    *resolver.Resolver
	Credentials *credentials.Store
}

// New builds the client from validated args; the resolver's workers and the
// credentials' pull-secret informers on client run until ctx is done. The
// credentials watch ServiceAccounts through f, which the caller starts.
func New(ctx context.Context, args *config.ArchFilterArgs, client kubernetes.Interface, f informers.SharedInformerFactory) (*Client, error) {
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
		return nil, fmt.Errorf("args: %w", err)
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
		return nil, err
	}
	resolver.RegisterMetrics()
	transport.RegisterMetrics()
	go r.Run(ctx)

	opts := credentials.Options{
		DockerConfigFile:         args.DockerConfigFile,
		CredentialProviderConfig: args.CredentialProviderConfig,
		CredentialProviderBinDir: args.CredentialProviderBinDir,
		SecretNamespaces:         args.SecretNamespaces,
	}
	if s := args.GlobalPullSecret; s != nil {
		opts.GlobalPullSecret = &types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	}
	store, err := credentials.NewStore(ctx, client, f, opts)
	if err != nil {
		return nil, fmt.Errorf("args credentials: %w", err)
	}
	return &Client{Resolver: r, Credentials: store}, nil
}
