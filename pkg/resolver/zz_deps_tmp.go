package resolver

import (
	_ "github.com/google/go-containerregistry/pkg/authn"
	_ "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	_ "github.com/google/go-containerregistry/pkg/name"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/google/go-containerregistry/pkg/v1/random"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/patrickmn/go-cache"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "golang.org/x/sync/singleflight"
	_ "golang.org/x/time/rate"
)
