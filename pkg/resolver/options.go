package resolver

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/utils/clock"
)

// Defaults for zero Options fields. They match the ArchFilterArgs defaults so that a
// resolver built without configuration behaves like the plugin's.
const (
	DefaultWorkers        = 16
	DefaultResolveTimeout = 10 * time.Second
	DefaultMaxEntries     = 100000
	DefaultTagTTL         = 5 * time.Minute
	DefaultDigestTTL      = 24 * time.Hour
	DefaultNegativeTTL    = 30 * time.Second
	// DefaultStaleWhileRevalidate is how long past its expiry an answer may
	// still be served while a background revalidation refreshes it.
	DefaultStaleWhileRevalidate = time.Hour
	DefaultMaxManifestBytes     = 4 << 20
	DefaultMaxDescriptors       = 1000
	DefaultMaxIndexDepth        = 4
)

// Endpoint is one place a registry's content is fetched from: a mirror or the registry
// itself.
type Endpoint struct {
	// Host is "host[:port]" as in image references: "mirror.example.com:5000", "[::1]:5000".
	Host string
	// Insecure lets the resolver fall back to plain HTTP when HTTPS fails, as the
	// container runtime does for insecure registries.
	Insecure bool
}

// CacheOptions bounds the answer cache.
type CacheOptions struct {
	// MaxEntries bounds tag, digest and failure entries together.
	MaxEntries int
	// TagTTL is how long a tag's digest is trusted before it is revalidated with HEAD.
	TagTTL time.Duration
	// DigestTTL is how long the platforms of a digest are served before the resolver checks,
	// with HEAD, that the registry still lets the same credential read it.
	DigestTTL time.Duration
	// NegativeTTL is how long a failure is served before the next attempt.
	NegativeTTL time.Duration
	// StaleWhileRevalidate is how long after a tag or digest answer expires
	// Lookup still serves it, starting a revalidation in the background, so
	// that pods are not held while one HEAD request refreshes what they
	// already know. Zero means DefaultStaleWhileRevalidate; negative turns it
	// off (an expired answer is a miss). Failures are never served stale.
	StaleWhileRevalidate time.Duration
}

// Options configures New. Zero fields take the defaults above.
type Options struct {
	// Workers is the number of goroutines that resolve ResolveAsync requests.
	Workers int
	// ResolveTimeout bounds everything one image resolution does on the network: every
	// handshake, manifest and config round trip on every endpoint.
	ResolveTimeout time.Duration
	// RequestTimeout bounds a single round trip (the handshake counts as one). Default:
	// ResolveTimeout. Independently, an endpoint that is not the last gets at most half of
	// the remaining budget, so a hung mirror always leaves the registry time.
	RequestTimeout time.Duration
	Cache          CacheOptions
	// Transport carries every request, including the auth handshake. It is where address
	// policy, TLS settings, 429 handling and circuit breaking live. Default: a clone of
	// http.DefaultTransport. When Run returns it closes the transport's idle connections
	// if the transport has a CloseIdleConnections method, as *http.Transport does: the
	// resolver is taken to be its only user.
	Transport http.RoundTripper
	// Endpoints returns where to fetch a registry's content, mirrors first and the registry
	// itself last. Nil, or an empty answer, means the registry alone.
	Endpoints func(registry string) []Endpoint
	// Clock drives cache expiry. Default: the real clock.
	Clock clock.PassiveClock
	// MaxManifestBytes caps every manifest and config body; a larger one fails the image
	// with InvalidManifest without being read further.
	MaxManifestBytes int64
	// MaxDescriptors caps the index entries examined for one image, nested ones included.
	MaxDescriptors int
	// MaxIndexDepth caps how deep indexes may nest.
	MaxIndexDepth int
}

func (o Options) withDefaults() (Options, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Workers", int64(o.Workers)},
		{"ResolveTimeout", int64(o.ResolveTimeout)},
		{"RequestTimeout", int64(o.RequestTimeout)},
		{"Cache.MaxEntries", int64(o.Cache.MaxEntries)},
		{"Cache.TagTTL", int64(o.Cache.TagTTL)},
		{"Cache.DigestTTL", int64(o.Cache.DigestTTL)},
		{"Cache.NegativeTTL", int64(o.Cache.NegativeTTL)},
		{"MaxManifestBytes", o.MaxManifestBytes},
		{"MaxDescriptors", int64(o.MaxDescriptors)},
		{"MaxIndexDepth", int64(o.MaxIndexDepth)},
	} {
		if f.v < 0 {
			return o, fmt.Errorf("resolver options: %s must not be negative, got %d", f.name, f.v)
		}
	}
	setDefault(&o.Workers, DefaultWorkers)
	setDefault(&o.ResolveTimeout, DefaultResolveTimeout)
	setDefault(&o.RequestTimeout, o.ResolveTimeout)
	setDefault(&o.Cache.MaxEntries, DefaultMaxEntries)
	setDefault(&o.Cache.TagTTL, DefaultTagTTL)
	setDefault(&o.Cache.DigestTTL, DefaultDigestTTL)
	setDefault(&o.Cache.NegativeTTL, DefaultNegativeTTL)
	setDefault(&o.Cache.StaleWhileRevalidate, DefaultStaleWhileRevalidate)
	setDefault(&o.MaxManifestBytes, DefaultMaxManifestBytes)
	setDefault(&o.MaxDescriptors, DefaultMaxDescriptors)
	setDefault(&o.MaxIndexDepth, DefaultMaxIndexDepth)
	if o.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = o.Workers
		o.Transport = t
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o, nil
}

func setDefault[T int | int64 | time.Duration](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}
