// Package serving is how archfilter-placement serves HTTPS: the TLS settings
// of its webhook and metrics listeners (--tls-min-version,
// --tls-cipher-suites), and the delegated authentication and authorization
// that guard /metrics (a TokenReview and a SubjectAccessReview to the API
// server, as kube-scheduler's secure port does).
package serving

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

// SecureCipherSuites are the TLS 1.2 suites the listeners accept by default
// and at most: forward secrecy (ECDHE) and authenticated encryption (AES-GCM,
// ChaCha20-Poly1305); no CBC, no RSA key exchange, no 3DES or RC4. TLS 1.3's
// suites are all AEAD and not configurable in Go.
var SecureCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}

// tls13Suites are accepted in --tls-cipher-suites (Kubernetes components
// accept them) and change nothing: Go always enables them for TLS 1.3.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// TLSOptions are the listeners' TLS flags.
type TLSOptions struct {
	MinVersion   string
	CipherSuites []string
}

// NewTLSOptions returns the defaults: TLS 1.2 or newer, SecureCipherSuites.
func NewTLSOptions() TLSOptions {
	return TLSOptions{MinVersion: "VersionTLS12", CipherSuites: slices.Clone(SecureCipherSuites)}
}

// AddFlags registers --tls-min-version and --tls-cipher-suites, named and
// spelt as Kubernetes components' (k8s.io/component-base/cli/flag).
func (o *TLSOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MinVersion, "tls-min-version", o.MinVersion, "minimum TLS version of the webhook and metrics listeners: VersionTLS12 or VersionTLS13")
	fs.StringSliceVar(&o.CipherSuites, "tls-cipher-suites", o.CipherSuites, "TLS 1.2 cipher suites of the webhook and metrics listeners, from: "+strings.Join(SecureCipherSuites, ", ")+" (TLS 1.3's are always on)")
}

// Config is the tls.Config of a listener whose certificate getCertificate
// returns. Errors name the flag.
func (o *TLSOptions) Config(getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) (*tls.Config, error) {
	version, err := cliflag.TLSVersion(o.MinVersion)
	if err != nil {
		return nil, fmt.Errorf("--tls-min-version: %w", err)
	}
	if version < tls.VersionTLS12 {
		return nil, fmt.Errorf("--tls-min-version %s: want VersionTLS12 or VersionTLS13", o.MinVersion)
	}
	if len(o.CipherSuites) == 0 {
		return nil, fmt.Errorf("--tls-cipher-suites: empty; want some of %s", strings.Join(SecureCipherSuites, ", "))
	}
	for _, name := range o.CipherSuites {
		if !slices.Contains(SecureCipherSuites, name) && !slices.Contains(tls13Suites, name) {
			return nil, fmt.Errorf("--tls-cipher-suites: %s is not one of the forward-secret AEAD suites %s", name, strings.Join(SecureCipherSuites, ", "))
		}
	}
	suites, err := cliflag.TLSCipherSuites(o.CipherSuites)
	if err != nil {
		return nil, fmt.Errorf("--tls-cipher-suites: %w", err)
	}
	return &tls.Config{
		MinVersion:     version,
		CipherSuites:   suites,
		GetCertificate: getCertificate,
	}, nil
}
