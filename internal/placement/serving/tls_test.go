package serving

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/util/cert"
)

// server serves "ok" over TLS with o's settings and a self-signed RSA
// certificate; it returns its address and the pool that trusts it.
func server(t *testing.T, o TLSOptions) (string, *x509.CertPool) {
	t.Helper()
	generated := selfSigned()
	if generated.err != nil {
		t.Fatal(generated.err)
	}
	certPEM, keyPEM := generated.cert, generated.key
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Config(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	// httptest would add its own certificate otherwise (and clients send no
	// server name for an IP address, so GetCertificate would not be asked).
	cfg.Certificates = []tls.Certificate{pair}
	srv.TLS = cfg
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return srv.Listener.Addr().String(), pool
}

// selfSigned is one certificate for every server of the tests (RSA keys
// take a while to generate).
var selfSigned = sync.OnceValue(func() (p pemPair) {
	p.cert, p.key, p.err = cert.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	return p
})

type pemPair struct {
	cert, key []byte
	err       error
}

// TestTLSRefusesWeakClients dials the listener's configuration as clients
// offering old versions or weak suites (refused) and modern ones (served).
func TestTLSRefusesWeakClients(t *testing.T) {
	defaults := NewTLSOptions()
	tls13 := NewTLSOptions()
	tls13.MinVersion = "VersionTLS13"
	for _, tc := range []struct {
		name   string
		server TLSOptions
		client *tls.Config
		ok     bool
	}{
		{name: "TLS 1.1", server: defaults, client: &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}},
		{name: "TLS 1.0", server: defaults, client: &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10}},
		{name: "TLS 1.2 CBC suite", server: defaults, client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256}}},
		{name: "TLS 1.2 RSA key exchange", server: defaults, client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384}}},
		{name: "TLS 1.2 AES-GCM", server: defaults, client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}, ok: true},
		{name: "TLS 1.2 ChaCha20", server: defaults, client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}}, ok: true},
		{name: "TLS 1.3", server: defaults, client: &tls.Config{MinVersion: tls.VersionTLS13}, ok: true},
		{name: "TLS 1.2 to a 1.3-only listener", server: tls13, client: &tls.Config{MaxVersion: tls.VersionTLS12}},
		{name: "TLS 1.3 to a 1.3-only listener", server: tls13, client: &tls.Config{MinVersion: tls.VersionTLS13}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, pool := server(t, tc.server)
			client := tc.client.Clone()
			client.RootCAs = pool
			conn, err := tls.Dial("tcp", addr, client)
			if !tc.ok {
				if err == nil {
					conn.Close()
					t.Fatalf("handshake succeeded, want it refused")
				}
				// The server's refusal, not a client-side setup error.
				var alert tls.AlertError
				if !errors.As(err, &alert) && !strings.Contains(err.Error(), "protocol version") && !strings.Contains(err.Error(), "handshake failure") {
					t.Fatalf("error %v, want the server's TLS alert", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(conn)
			if err != nil || !strings.HasSuffix(string(b), "ok") {
				t.Fatalf("response %q, %v", b, err)
			}
		})
	}
}

// TestTLSOptionsRefuse: versions below 1.2 and suites other than the
// forward-secret AEAD ones are refused with the flag's name.
func TestTLSOptionsRefuse(t *testing.T) {
	for _, tc := range []struct {
		o    TLSOptions
		want string
	}{
		{TLSOptions{MinVersion: "VersionTLS11", CipherSuites: SecureCipherSuites}, "--tls-min-version VersionTLS11"},
		{TLSOptions{MinVersion: "TLS1.2", CipherSuites: SecureCipherSuites}, "--tls-min-version"},
		{TLSOptions{MinVersion: "VersionTLS12", CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"}}, "--tls-cipher-suites: TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"},
		{TLSOptions{MinVersion: "VersionTLS12", CipherSuites: []string{"TLS_RSA_WITH_AES_128_GCM_SHA256"}}, "--tls-cipher-suites: TLS_RSA_WITH_AES_128_GCM_SHA256"},
		{TLSOptions{MinVersion: "VersionTLS12"}, "--tls-cipher-suites: empty"},
	} {
		if _, err := tc.o.Config(nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
	if _, err := (&TLSOptions{MinVersion: "VersionTLS13", CipherSuites: []string{"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}).Config(nil); err != nil {
		t.Errorf("TLS 1.3 suite named: %v", err)
	}
}
