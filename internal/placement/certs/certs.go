// Package certs owns the placement webhook's serving certificate: a
// self-signed CA and a serving certificate it signs, kept in a Secret so that
// replicas and restarts share them, renewed before they expire, with the CA
// bundle handed to whoever registers the webhook.
package certs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Secret keys.
const (
	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
	KeyTLSCert = v1.TLSCertKey
	KeyTLSKey  = v1.TLSPrivateKeyKey
	// KeyCABundle holds the CA certificates clients must trust: the current
	// CA and, for one rotation, the previous one.
	KeyCABundle = "ca-bundle.crt"
)

// ManagedByLabel, set to ManagedBy, marks the Secret this package created,
// which the uninstall deletes.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "archfilter-placement"
)

// caValidityFactor: the CA lives this many serving-certificate lifetimes.
const caValidityFactor = 10

// Options say what the serving certificate is for and where it is kept.
type Options struct {
	// Client stores the Secret; nil (or an empty SecretName) keeps the
	// certificates in memory only.
	Client     kubernetes.Interface
	Namespace  string
	SecretName string
	// DNSNames and IPs are the serving certificate's subject alternative names.
	DNSNames []string
	IPs      []net.IP
	// Validity is the serving certificate's lifetime; it is renewed when a
	// third of it is left. Unused when External.
	Validity time.Duration
	// External means someone else issues and renews the Secret (cert-manager):
	// it is read, never written, and its ca.crt is the CA bundle published.
	External bool
	// OnCABundle is called with the CA bundle whenever it may have changed,
	// before the new serving certificate is served.
	OnCABundle func(ctx context.Context, bundle []byte) error
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Manager serves the current certificate.
type Manager struct {
	opts    Options
	current atomic.Pointer[tls.Certificate]
	bundle  atomic.Pointer[[]byte]

	// mu serialises Ensure; memory holds the data when there is no Secret.
	mu     sync.Mutex
	memory map[string][]byte
}

// New returns a Manager; Ensure loads or creates the first certificate.
func New(opts Options) (*Manager, error) {
	if opts.External && (opts.Client == nil || opts.SecretName == "") {
		return nil, errors.New("certificate: an external certificate needs a client and a Secret name")
	}
	if opts.Validity <= 0 && !opts.External {
		return nil, fmt.Errorf("certificate validity %v: must be positive", opts.Validity)
	}
	if len(opts.DNSNames) == 0 && len(opts.IPs) == 0 && !opts.External {
		return nil, errors.New("certificate: no DNS name or IP address to serve")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{opts: opts}, nil
}

// GetCertificate is tls.Config's GetCertificate.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := m.current.Load()
	if c == nil {
		return nil, errors.New("no serving certificate yet")
	}
	return c, nil
}

// CABundle is the PEM bundle clients must trust.
func (m *Manager) CABundle() []byte {
	if b := m.bundle.Load(); b != nil {
		return *b
	}
	return nil
}

// Run renews the certificate every interval check until ctx is done.
func (m *Manager) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := m.Ensure(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Renewing the placement webhook's certificate")
		}
	}, interval)
}

// Ensure loads the Secret, renews what is due (serving certificate with a
// third of its life left, CA with less than a serving lifetime left, names
// that changed), stores it, publishes the CA bundle and then serves it.
func (m *Manager) Ensure(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opts.External {
		return m.ensureExternal(ctx)
	}
	for range 5 {
		secret, err := m.load(ctx)
		if err != nil {
			return err
		}
		data := map[string][]byte{}
		if secret != nil {
			data = secret.Data
		}
		updated, changed, err := m.renew(data)
		if err != nil {
			return err
		}
		if changed {
			if err := m.store(ctx, secret, updated); apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
				continue // another replica renewed it: use theirs
			} else if err != nil {
				return err
			}
		}
		if m.opts.OnCABundle != nil {
			if err := m.opts.OnCABundle(ctx, updated[KeyCABundle]); err != nil {
				return fmt.Errorf("publishing the CA bundle: %w", err)
			}
		}
		cert, err := tls.X509KeyPair(updated[KeyTLSCert], updated[KeyTLSKey])
		if err != nil {
			return fmt.Errorf("serving certificate in Secret %s/%s: %w", m.opts.Namespace, m.opts.SecretName, err)
		}
		bundle := updated[KeyCABundle]
		m.bundle.Store(&bundle)
		m.current.Store(&cert)
		return nil
	}
	return fmt.Errorf("Secret %s/%s: too many conflicting updates", m.opts.Namespace, m.opts.SecretName)
}

// ensureExternal serves the Secret someone else issued, as it is: its
// ca.crt is published first, so the apiserver trusts the certificate before it
// is served. A Secret not issued yet is an error (the caller retries).
func (m *Manager) ensureExternal(ctx context.Context) error {
	secret, err := m.load(ctx)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("Secret %s/%s", m.opts.Namespace, m.opts.SecretName)
	if secret == nil {
		return fmt.Errorf("%s does not exist (yet): the certificate's issuer (cert-manager) writes it", where)
	}
	for _, k := range []string{KeyTLSCert, KeyTLSKey, KeyCACert} {
		if len(secret.Data[k]) == 0 {
			return fmt.Errorf("%s has no %s (yet): the certificate's issuer (cert-manager) writes it", where, k)
		}
	}
	cert, err := tls.X509KeyPair(secret.Data[KeyTLSCert], secret.Data[KeyTLSKey])
	if err != nil {
		return fmt.Errorf("serving certificate in %s: %w", where, err)
	}
	bundle := secret.Data[KeyCACert]
	if old := m.bundle.Load(); old != nil && bytes.Equal(*old, bundle) && m.current.Load() != nil && bytes.Equal(m.current.Load().Certificate[0], cert.Certificate[0]) {
		return nil
	}
	if m.opts.OnCABundle != nil {
		if err := m.opts.OnCABundle(ctx, bundle); err != nil {
			return fmt.Errorf("publishing the CA bundle: %w", err)
		}
	}
	m.bundle.Store(&bundle)
	m.current.Store(&cert)
	return nil
}

func (m *Manager) persistent() bool { return m.opts.Client != nil && m.opts.SecretName != "" }

func (m *Manager) load(ctx context.Context) (*v1.Secret, error) {
	if !m.persistent() {
		if m.memory != nil {
			return &v1.Secret{Data: m.memory}, nil
		}
		return nil, nil
	}
	s, err := m.opts.Client.CoreV1().Secrets(m.opts.Namespace).Get(ctx, m.opts.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", m.opts.Namespace, m.opts.SecretName, err)
	}
	return s, nil
}

func (m *Manager) store(ctx context.Context, old *v1.Secret, data map[string][]byte) error {
	if !m.persistent() {
		m.memory = data
		return nil
	}
	secrets := m.opts.Client.CoreV1().Secrets(m.opts.Namespace)
	var err error
	if old == nil {
		_, err = secrets.Create(ctx, &v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: m.opts.SecretName, Namespace: m.opts.Namespace, Labels: map[string]string{ManagedByLabel: ManagedBy}},
			Type:       v1.SecretTypeTLS,
			Data:       data,
		}, metav1.CreateOptions{})
	} else {
		s := old.DeepCopy()
		s.Data = data
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("storing Secret %s/%s: %w", m.opts.Namespace, m.opts.SecretName, err)
	}
	return err
}

// renew returns data with whatever is due renewed, and whether anything was.
func (m *Manager) renew(data map[string][]byte) (map[string][]byte, bool, error) {
	now := m.opts.Now()
	out := map[string][]byte{}
	for k, v := range data {
		out[k] = v
	}
	ca, caKey, caErr := parsePair(out[KeyCACert], out[KeyCAKey])
	changed := false
	if caErr != nil || ca.NotAfter.Sub(now) < m.opts.Validity {
		var err error
		previous := out[KeyCACert]
		ca, caKey, out[KeyCACert], out[KeyCAKey], err = m.newCA(now)
		if err != nil {
			return nil, false, err
		}
		// The previous CA stays trusted while certificates it signed may
		// still be served by other replicas.
		out[KeyCABundle] = append(append([]byte(nil), out[KeyCACert]...), pemOnly(previous)...)
		delete(out, KeyTLSCert)
		changed = true
	}
	if len(out[KeyCABundle]) == 0 {
		out[KeyCABundle] = out[KeyCACert]
		changed = true
	}
	serving, _, err := parsePair(out[KeyTLSCert], out[KeyTLSKey])
	if err != nil || serving.NotAfter.Sub(now) < m.opts.Validity/3 || !m.namesMatch(serving) || serving.CheckSignatureFrom(ca) != nil {
		out[KeyTLSCert], out[KeyTLSKey], err = m.newServing(now, ca, caKey)
		if err != nil {
			return nil, false, err
		}
		changed = true
	}
	return out, changed, nil
}

func (m *Manager) namesMatch(c *x509.Certificate) bool {
	if len(c.DNSNames) != len(m.opts.DNSNames) || len(c.IPAddresses) != len(m.opts.IPs) {
		return false
	}
	for i, n := range m.opts.DNSNames {
		if c.DNSNames[i] != n {
			return false
		}
	}
	for i, ip := range m.opts.IPs {
		if !c.IPAddresses[i].Equal(ip) {
			return false
		}
	}
	return true
}

func (m *Manager) newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("generating the CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("archfilter-placement-ca@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidityFactor * m.opts.Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return ca, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func (m *Manager) newServing(now time.Time, ca *x509.Certificate, caKey *ecdsa.PrivateKey) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the serving key: %w", err)
	}
	cn := "archfilter-placement"
	if len(m.opts.DNSNames) > 0 {
		cn = m.opts.DNSNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     m.opts.DNSNames,
		IPAddresses:  m.opts.IPs,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(m.opts.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("key is %T, want ECDSA", pair.PrivateKey)
	}
	return cert, key, nil
}

// pemOnly returns the first PEM certificate block of b, re-encoded, or nil.
func pemOnly(b []byte) []byte {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil
	}
	return bytes.TrimSpace(pem.EncodeToMemory(block))
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
