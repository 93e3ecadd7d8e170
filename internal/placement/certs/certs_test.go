package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func servingCert(t *testing.T, m *Manager) *x509.Certificate {
	t.Helper()
	c, err := m.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// handshake serves with m and connects trusting only the published bundle.
func handshake(t *testing.T, m *Manager, bundle []byte, now func() time.Time) error {
	t.Helper()
	// Served by address, without SNI, as the apiserver calls a URL webhook:
	// GetCertificate must answer (httptest's own certificate would win).
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: m.GetCertificate})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatalf("bundle holds no certificate: %q", bundle)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Time: now}}}
	resp, err := client.Get("https://" + l.Addr().String())
	if err == nil {
		resp.Body.Close()
	}
	return err
}

func TestManagerCreatesStoresAndRenews(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	clk := &clock{now: time.Now()}
	var published [][]byte
	opts := Options{
		Client: client, Namespace: "ns", SecretName: "tls",
		IPs: []net.IP{net.ParseIP("127.0.0.1")}, Validity: 30 * 24 * time.Hour, Now: clk.Now,
		OnCABundle: func(_ context.Context, b []byte) error { published = append(published, b); return nil },
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	first := servingCert(t, m)
	if err := handshake(t, m, published[len(published)-1], clk.Now); err != nil {
		t.Fatalf("TLS with the published bundle: %v", err)
	}
	secret, err := client.CoreV1().Secrets("ns").Get(ctx, "tls", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret not stored: %v", err)
	}

	// A second process loads the same certificate rather than minting one.
	other, _ := New(opts)
	if err := other.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if got := servingCert(t, other); got.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Errorf("second manager serves serial %v, want the stored %v", got.SerialNumber, first.SerialNumber)
	}

	// Within the first two thirds of its life the certificate is kept.
	clk.now = clk.now.Add(opts.Validity / 2)
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if got := servingCert(t, m); got.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Errorf("renewed at half its life")
	}
	// With less than a third left it is renewed, by the same CA.
	clk.now = first.NotAfter.Add(-opts.Validity / 4)
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	renewed := servingCert(t, m)
	if renewed.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatalf("not renewed with a quarter of its life left")
	}
	after, _ := client.CoreV1().Secrets("ns").Get(ctx, "tls", metav1.GetOptions{})
	if string(after.Data[KeyCACert]) != string(secret.Data[KeyCACert]) {
		t.Errorf("CA replaced while it had years left")
	}
	if err := handshake(t, m, published[len(published)-1], clk.Now); err != nil {
		t.Fatalf("TLS after renewal: %v", err)
	}

	// Near the CA's expiry a new CA is made; the bundle trusts both.
	ca, _, _ := parsePair(after.Data[KeyCACert], after.Data[KeyCAKey])
	clk.now = ca.NotAfter.Add(-opts.Validity / 2)
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	rotated, _ := client.CoreV1().Secrets("ns").Get(ctx, "tls", metav1.GetOptions{})
	if string(rotated.Data[KeyCACert]) == string(after.Data[KeyCACert]) {
		t.Fatalf("CA not replaced half a serving lifetime before its expiry")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rotated.Data[KeyCABundle])
	if got := len(pool.Subjects()); got != 2 { //nolint:staticcheck // counting certificates
		t.Errorf("bundle holds %d CAs, want the new and the previous", got)
	}
}

func TestManagerInMemory(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var bundle []byte
	m, err := New(Options{DNSNames: []string{"svc.ns.svc"}, Validity: time.Hour, OnCABundle: func(_ context.Context, b []byte) error { bundle = b; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	first := servingCert(t, m)
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if got := servingCert(t, m); got.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Errorf("in-memory certificate reminted on every check")
	}
	if len(bundle) == 0 {
		t.Errorf("no CA bundle published")
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(Options{Validity: time.Hour}); err == nil {
		t.Error("New without names succeeded")
	}
	if _, err := New(Options{DNSNames: []string{"a"}}); err == nil {
		t.Error("New without validity succeeded")
	}
}

// TestManagerExternal: a Secret issued by someone else (cert-manager) is
// waited for, served as it is with its ca.crt published, never written, and
// followed when it is renewed.
func TestManagerExternal(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	var published [][]byte
	m, err := New(Options{Client: client, Namespace: "ns", SecretName: "issued", External: true,
		OnCABundle: func(_ context.Context, b []byte) error { published = append(published, b); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	// ensure is Ensure, which only ever reads the Secret.
	ensure := func() error {
		client.ClearActions()
		err := m.Ensure(ctx)
		for _, a := range client.Actions() {
			if a.GetVerb() != "get" {
				t.Errorf("the external Secret was written: %s %s", a.GetVerb(), a.GetResource().Resource)
			}
		}
		return err
	}
	if err := ensure(); err == nil || !strings.Contains(err.Error(), "ns/issued does not exist") {
		t.Fatalf("Ensure before the Secret exists: %v, want an error naming it", err)
	}
	// What an issuer writes: mint one with a self-managed Manager in memory.
	issue := func() map[string][]byte {
		src, err := New(Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Validity: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := src.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		return map[string][]byte{KeyTLSCert: src.memory[KeyTLSCert], KeyTLSKey: src.memory[KeyTLSKey], KeyCACert: src.memory[KeyCACert]}
	}
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "issued"}, Data: map[string][]byte{KeyTLSCert: []byte("x")}}
	if _, err := client.CoreV1().Secrets("ns").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensure(); err == nil || !strings.Contains(err.Error(), "has no tls.key") {
		t.Fatalf("Ensure on a Secret being issued: %v, want an error naming the missing key", err)
	}
	secret.Data = issue()
	if _, err := client.CoreV1().Secrets("ns").Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensure(); err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, m, published[len(published)-1], nil); err != nil {
		t.Errorf("TLS with the published ca.crt: %v", err)
	}
	if err := ensure(); err != nil || len(published) != 1 {
		t.Errorf("unchanged Secret: %v, published %d times, want once", err, len(published))
	}
	secret.Data = issue() // renewed, under a new CA
	if _, err := client.CoreV1().Secrets("ns").Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensure(); err != nil || len(published) != 2 {
		t.Fatalf("renewed Secret: %v, published %d times, want twice", err, len(published))
	}
	if err := handshake(t, m, secret.Data[KeyCACert], nil); err != nil {
		t.Errorf("TLS after renewal with the new ca.crt: %v", err)
	}
}
