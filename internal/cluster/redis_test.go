package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func TestClientKindFollowsTheOptions(t *testing.T) {
	tests := []struct {
		name string
		o    config.ClusterOptions
		want string
	}{
		{"one address", config.ClusterOptions{Addrs: []string{"10.0.0.1:6379"}}, "*redis.Client"},
		{"default address", config.ClusterOptions{}, "*redis.Client"},
		{"several addresses: Redis Cluster", config.ClusterOptions{Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379"}}, "*redis.ClusterClient"},
		{"Sentinel", config.ClusterOptions{Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, SentinelMaster: "main"}, "*redis.Client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newClient(tt.o.WithDefaults(), "test", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var got string
			switch c.(type) {
			case *redis.ClusterClient:
				got = "*redis.ClusterClient"
			case *redis.Client:
				got = "*redis.Client"
			}
			if got != tt.want {
				t.Fatalf("client %T, want %s", c, tt.want)
			}
		})
	}
}

func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeCertificates(t, dir)
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tls     config.ClusterTLS
		wantErr string // empty: valid
	}{
		{"off", config.ClusterTLS{}, ""},
		{"system roots", config.ClusterTLS{Enable: true}, ""},
		{"CA, client certificate and name", config.ClusterTLS{CA: ca, Cert: cert, Key: key, ServerName: "redis.internal"}, ""},
		{"missing CA file", config.ClusterTLS{CA: filepath.Join(dir, "none.pem")}, "redis_tls_ca"},
		{"CA file without certificates", config.ClusterTLS{CA: bad}, "redis_tls_ca: no PEM certificate"},
		{"key that is no key", config.ClusterTLS{Cert: cert, Key: bad}, "redis_tls_cert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := TLSConfig(tt.tls)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one about %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (cfg != nil) != tt.tls.On() {
				t.Fatalf("TLS config %v for %+v", cfg, tt.tls)
			}
			if cfg != nil && (cfg.ServerName != tt.tls.ServerName || (tt.tls.Cert != "") != (len(cfg.Certificates) == 1) || (tt.tls.CA != "") != (cfg.RootCAs != nil)) {
				t.Fatalf("TLS config does not follow %+v", tt.tls)
			}
		})
	}
}

// writeCertificates writes a CA and a certificate it signed for 127.0.0.1 (server and client
// use), PEM, and returns their paths: the CA, the certificate, its key.
func writeCertificates(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis.internal"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"redis.internal"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caTmpl, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKeyDER, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", leafDER), write("key.pem", "EC PRIVATE KEY", leafKeyDER)
}

func TestMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, cert, key := writeCertificates(t, dir)
	tlsPort := testutil.FreePort(t)
	// The plain port serves the helper's readiness check; the instance uses the TLS port, where
	// Redis requires a client certificate.
	r := testutil.StartRedis(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "yes")
	b := &fakeBackend{}
	b.up.Store(true)
	o := config.ClusterOptions{Addrs: []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPort))},
		TLS: config.ClusterTLS{CA: ca, Cert: cert, Key: key, ServerName: "redis.internal"}}
	in := fleet(t, o, b, 1)[0]
	if !in.c.up.Load() {
		t.Fatalf("not connected over TLS: %v", in.log.String())
	}
	rc := r.Client(t)
	testutil.Eventually(t, time.Second, func() bool {
		keys, err := rc.Keys(context.Background(), "gslb:health:*").Result()
		return err == nil && len(keys) == 1
	}, "no result written over TLS")
}
