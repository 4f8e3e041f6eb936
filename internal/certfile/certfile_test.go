package certfile

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
)

func TestReloadKeepsTheLastGoodPair(t *testing.T) {
	dir := t.TempDir()
	cert1, key1, _ := admintest.Certificate(t, filepath.Join(mkdir(t, dir, "one")))
	cert2, key2, _ := admintest.Certificate(t, filepath.Join(mkdir(t, dir, "two")))
	certFile, keyFile := filepath.Join(dir, "dns.crt"), filepath.Join(dir, "dns.key")
	copyFile(t, cert1, certFile)
	copyFile(t, key1, keyFile)
	c, err := Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	served := func() []byte {
		got, err := c.Config().GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Certificate[0]
	}
	first := served()

	// A half-written pair (the new certificate, the old key) does not load: the old pair serves.
	copyFile(t, cert2, certFile)
	if err := c.Reload(); err == nil || !strings.Contains(err.Error(), "dns.crt") {
		t.Errorf("a certificate without its key: %v", err)
	}
	if string(served()) != string(first) {
		t.Error("a failed reload changed the certificate")
	}
	copyFile(t, key2, keyFile)
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if string(served()) == string(first) || c.NotAfter().IsZero() {
		t.Error("the new pair is not served")
	}
	if _, err := Load(filepath.Join(dir, "missing.crt"), keyFile); err == nil {
		t.Error("a missing file loads")
	}
	if cfg := c.Config(); cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("TLS minimum version %x", cfg.MinVersion)
	}
}

func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, data, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}
