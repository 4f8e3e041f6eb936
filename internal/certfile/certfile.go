// Package certfile serves a TLS certificate from PEM files and reads them again when asked
// (when they change: the caller watches them), so that a certificate renewed on disk (by
// certbot, cert-manager, an operator) is served from the next handshake without a restart.
// A pair that does not load keeps the previous one serving.
package certfile

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/config"
)

// expiry is when each served certificate expires, by certificate file.
var expiry = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "tls_certificate_expiry_timestamp_seconds",
	Help: "When the certificate served for DNS over TLS and QUIC expires (Unix time), by certificate file.",
}, []string{"file"})

// reloads counts the reads of the files after a change, by result.
var reloads = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: config.MetricsNamespace, Subsystem: config.MetricsSubsystem, Name: "tls_certificate_reloads_total",
	Help: "Reads of the DNS over TLS and QUIC certificate files after they changed, by result (success, failure: the previous certificate keeps serving).",
}, []string{"result"})

// Cert is a certificate and its key, read from two PEM files.
type Cert struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// Load reads the pair of files; it fails when they do not load.
func Load(certFile, keyFile string) (*Cert, error) {
	c := &Cert{certFile: certFile, keyFile: keyFile}
	if err := c.read(); err != nil {
		return nil, err
	}
	return c, nil
}

// read reads the files and serves their pair.
func (c *Cert) read() error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("tls_cert %s and tls_key %s: %w", c.certFile, c.keyFile, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("tls_cert %s: %w", c.certFile, err)
	}
	pair.Leaf = leaf
	c.cur.Store(&pair)
	expiry.WithLabelValues(c.certFile).Set(float64(leaf.NotAfter.Unix()))
	return nil
}

// Reload reads the files again. On error the previous pair keeps serving.
func (c *Cert) Reload() error {
	err := c.read()
	result := "success"
	if err != nil {
		result = "failure"
	}
	reloads.WithLabelValues(result).Inc()
	return err
}

// Files returns the certificate and key files, to watch.
func (c *Cert) Files() []string { return []string{c.certFile, c.keyFile} }

// NotAfter returns when the served certificate expires.
func (c *Cert) NotAfter() time.Time { return c.cur.Load().Leaf.NotAfter }

// Config returns the TLS configuration of a server that serves the pair: TLS 1.2 or later,
// the current pair at each handshake.
func (c *Cert) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}
