package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// KeySpec is a DNSSEC key pair to write as BIND key files (WriteKey).
type KeySpec struct {
	// Zone is the key's owner; Algorithm dns.ECDSAP256SHA256 or dns.ED25519 (the default);
	// KSK sets the SEP flag (a KSK, or a CSK when every key of a zone has it).
	Zone      string
	Algorithm uint8
	KSK       bool
	// Timing metadata written in the .private file as dnssec-settime writes it (zero: unset):
	// Publish, Activate, Inactive, Delete, SyncPublish, SyncDelete.
	Publish, Activate, Inactive, Delete, SyncPublish, SyncDelete time.Time
}

// Key is a key pair WriteKey wrote.
type Key struct {
	// Base is the files' path without .key or .private; DNSKEY the public key.
	Base   string
	DNSKEY *dns.DNSKEY
}

// WriteKey generates the key pair spec describes and writes it into dir as BIND's
// dnssec-keygen does (Kzone.+alg+tag.key and .private, with the timing metadata): Go code, so
// that tests need no key generator.
func WriteKey(t testing.TB, dir string, spec KeySpec) *Key {
	t.Helper()
	alg := spec.Algorithm
	if alg == 0 {
		alg = dns.ED25519
	}
	flags := uint16(dns.ZONE)
	if spec.KSK {
		flags |= dns.SEP
	}
	k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: dns.Fqdn(spec.Zone), Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: flags, Protocol: 3, Algorithm: alg}
	priv, err := k.Generate(256)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, fmt.Sprintf("K%s+%03d+%05d", dns.Fqdn(spec.Zone), alg, k.KeyTag()))
	private := k.PrivateKeyString(priv)
	for _, tm := range []struct {
		name string
		at   time.Time
	}{{"Publish", spec.Publish}, {"Activate", spec.Activate}, {"Inactive", spec.Inactive}, {"Delete", spec.Delete},
		{"SyncPublish", spec.SyncPublish}, {"SyncDelete", spec.SyncDelete}} {
		if !tm.at.IsZero() {
			private += fmt.Sprintf("%s: %s\n", tm.name, tm.at.UTC().Format("20060102150405"))
		}
	}
	pub := fmt.Sprintf("; This is a %s key, keyid %d, for %s\n%s\n", map[bool]string{true: "key-signing", false: "zone-signing"}[spec.KSK], k.KeyTag(), k.Hdr.Name, k.String())
	if err := os.WriteFile(base+".key", []byte(pub), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".private", []byte(private), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Key{Base: base, DNSKEY: k}
}

// DS returns the key's DS record (SHA-256) with the TTL ttl in zone file form, for a parent
// zone.
func (k *Key) DS(ttl uint32) string {
	ds := k.DNSKEY.ToDS(dns.SHA256)
	ds.Hdr.Ttl = ttl
	return strings.ReplaceAll(ds.String(), "\t", " ")
}
