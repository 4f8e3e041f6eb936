package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/quic-go/quic-go"

	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// withBig is staticWWW (www.example.org., 10.0.0.1) with big.example.org., whose n addresses
// (10.1.0.1 to 10.1.0.n, in random order) make a large answer: 60 do not fit a UDP answer
// without EDNS; 40 are what a reflection attack asks for.
func withBig(n int) string {
	var b strings.Builder
	b.WriteString(staticWWW + "  big.example.org.:\n    mode: random\n    backends:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {address: 10.1.0.%d}\n", i)
	}
	return b.String()
}

// kdig runs kdig with args and returns its output; the test is skipped without kdig (Debian
// package knot-dnsutils; make deps installs it).
func kdig(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("kdig"); err != nil {
		t.Skip("kdig is not installed (Debian package knot-dnsutils)")
	}
	out, err := exec.Command("kdig", append([]string{"+time=3", "+retry=0"}, args...)...).CombinedOutput()
	return string(out), err
}

// TestEncryptedTransports serves a zone on plain DNS, DNS over TLS, QUIC and HTTPS from one
// server block with tls_cert: kdig asks over TLS and HTTPS (verifying the certificate) and
// QUIC, unbound forwards to it over TLS, answers are never truncated on the encrypted
// transports, and a certificate replaced on disk is served from the next handshake.
func TestEncryptedTransports(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, second := t.TempDir(), t.TempDir()
	ca1, _, _ := admintest.Certificate(t, first)
	ca2, _, _ := admintest.Certificate(t, second)
	certFile, keyFile := filepath.Join(dir, "dns.crt"), filepath.Join(dir, "dns.key")
	install := func(from string) {
		t.Helper()
		for src, dst := range map[string]string{"api.crt": certFile, "api.key": keyFile} {
			data, err := os.ReadFile(filepath.Join(from, src))
			if err == nil {
				err = os.WriteFile(dst+".tmp", data, 0o600)
			}
			if err == nil {
				err = os.Rename(dst+".tmp", dst)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	install(first)
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte(withBig(60)), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := testutil.FreePorts(t, 3)
	tlsAddr, quicAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	s := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d tls://.:%d quic://.:%d https://.:%d {\n bind 127.0.0.1\n https {\n  max_connections 100\n }\n gslb {\n  zone example.org. %s\n  tls_cert %s\n  tls_key %s\n }\n}\n",
			port, ports[0], ports[1], ports[2], zone, certFile, keyFile)
	})

	// kdig over TLS, verifying the certificate (Out-Of-Band profile), without EDNS: the whole
	// answer, which UDP truncates.
	out, err := kdig(t, "@127.0.0.1", "-p", fmt.Sprint(ports[0]), "+tls-ca="+ca1, "+tls-hostname=localhost", "+noedns", "big.example.org", "A")
	if err != nil || !strings.Contains(out, "TLS session") || strings.Count(out, "\tA\t10.1.0.") != 60 || strings.Contains(out, " tc") {
		t.Fatalf("kdig over TLS: %v\n%s\n%s", err, out, s.Logs())
	}
	if r := s.Query(t, "udp", "big.example.org", dns.TypeA); !r.Truncated {
		t.Errorf("UDP without EDNS is not truncated: %d answers", len(r.Answer))
	}

	// DNS over QUIC, with kdig when it speaks QUIC (Debian's is built without ngtcp2), else
	// with quic-go's client.
	out, err = kdig(t, "@127.0.0.1", "-p", fmt.Sprint(ports[1]), "+quic", "+noedns", "big.example.org", "A")
	switch {
	case err == nil && strings.Contains(out, "QUIC"):
		if strings.Count(out, "\tA\t10.1.0.") != 60 {
			t.Errorf("kdig over QUIC:\n%s", out)
		}
	default:
		t.Logf("kdig does not speak QUIC here (%v); asking with quic-go", err)
		r := doqExchange(t, quicAddr, ca1, "big.example.org.")
		if len(r.Answer) != 60 || r.Truncated {
			t.Errorf("DNS over QUIC: %d answers, TC %t", len(r.Answer), r.Truncated)
		}
	}

	// kdig over HTTPS (DNS over HTTPS, RFC 8484), verifying the certificate: the whole answer.
	out, err = kdig(t, "@127.0.0.1", "-p", fmt.Sprint(ports[2]), "+https", "+tls-ca="+ca1, "+tls-hostname=localhost", "+noedns", "big.example.org", "A")
	if err != nil || !strings.Contains(out, "HTTP session") || strings.Count(out, "\tA\t10.1.0.") != 60 || strings.Contains(out, " tc") {
		t.Errorf("kdig over HTTPS: %v\n%s", err, out)
	}

	// unbound, a resolver that talks to the authoritative over TLS.
	u := testutil.StartUnboundTLS(t, "example.org.", tlsAddr, ca1)
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)
	if r, _, err := c.Exchange(q, u.Addr); err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.0.0.1" {
		t.Fatalf("unbound over TLS: %v %v\n%s", r, err, u.Log())
	}

	// A new certificate on disk: served from the next handshake; the old CA no longer
	// verifies it.
	install(second)
	testutil.Eventually(t, 10*time.Second, func() bool {
		out, err := kdig(t, "@127.0.0.1", "-p", fmt.Sprint(ports[0]), "+tls-ca="+ca2, "+tls-hostname=localhost", "www.example.org", "A")
		return err == nil && strings.Contains(out, "10.0.0.1")
	}, "the new certificate is not served:\n%s", s.Logs())
	if out, err := kdig(t, "@127.0.0.1", "-p", fmt.Sprint(ports[0]), "+tls-ca="+ca1, "+tls-hostname=localhost", "www.example.org", "A"); err == nil && strings.Contains(out, "10.0.0.1") {
		t.Errorf("the old certificate is still served:\n%s", out)
	}
	if r := doqExchange(t, quicAddr, ca2, "www.example.org."); len(r.Answer) != 1 {
		t.Errorf("DNS over QUIC with the new certificate: %v", r)
	}
	if out, err := kdig(t, "@127.0.0.1", "-p", fmt.Sprint(ports[2]), "+https", "+tls-ca="+ca2, "+tls-hostname=localhost", "www.example.org", "A"); err != nil || !strings.Contains(out, "10.0.0.1") {
		t.Errorf("DNS over HTTPS with the new certificate: %v\n%s", err, out)
	}
}

// TestEncryptedAddressNeedsACertificate: a tls:// address without tls_cert is refused at
// start, rather than served as plain DNS over TCP.
func TestEncryptedAddressNeedsACertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte(staticWWW), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "Corefile")
	port := testutil.FreePort(t)
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("tls://.:%d {\n gslb {\n  zone example.org. %s\n }\n}\n", port, zone)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testutil.Binary(t), "-conf", conf).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs a certificate: give tls_cert and tls_key") {
		t.Errorf("tls:// without a certificate: %v\n%s", err, out)
	}
}

// doqExchange asks addr name A over DNS over QUIC (RFC 9250) without EDNS, verifying its
// certificate for localhost against the CA in caFile, with quic-go's client.
func doqExchange(t *testing.T, addr, caFile, name string) *dns.Msg {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, addr, &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"doq"}}, nil)
	if err != nil {
		t.Fatalf("DNS over QUIC to %s: %v", addr, err)
	}
	defer conn.CloseWithError(0, "")
	stream, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	q.Id = 0 // RFC 9250 4.2.1
	pkt, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(pkt))), pkt...)); err != nil {
		t.Fatal(err)
	}
	_ = stream.Close() // the query's STREAM FIN
	resp, err := io.ReadAll(stream)
	if err != nil || len(resp) < 2 {
		t.Fatalf("DNS over QUIC answer: %v (%d bytes)", err, len(resp))
	}
	var r dns.Msg
	if err := r.Unpack(resp[2:]); err != nil {
		t.Fatal(err)
	}
	return &r
}
