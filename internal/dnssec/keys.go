// Package dnssec is Meridian's DNSSEC signer: the keys read from BIND-format key files (their
// roles and their timing metadata, which drive rollovers), RRSIGs made with the keys that are
// active at a moment, the DNSKEY, CDS and CDNSKEY RRsets and the DS the parent should hold,
// the NSEC records of compact denial of existence (RFC 9824) and of the wildcards' chains,
// and the bounded, lock-free cache of the signatures made on demand. It signs what it is
// given and knows nothing of the catalog or of answers: package catalog and package answer
// decide what is signed and when (docs/dnssec.md).
package dnssec

import (
	"bufio"
	"crypto"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Key is one DNSSEC key pair, read from a BIND key file pair (Kzone.+alg+tag.key and .private).
type Key struct {
	// DNSKEY is the public key as its .key file gives it (owner the file's zone).
	DNSKEY *dns.DNSKEY
	signer crypto.Signer
	// Tag is the key tag (RFC 4034 Appendix B); File the base name the key was read from.
	Tag  uint16
	File string
	// Timing is the key's timing metadata (dnssec-settime), zero times for unset.
	Timing Timing
}

// Timing is a key's timing metadata, as BIND's key files hold it: when the key is published
// in the DNSKEY RRset, starts and stops signing, leaves the RRset, and is published in the
// CDS and CDNSKEY RRsets for the parent. A zero time is unset: Publish and Activate then
// count as always past, Inactive and Delete as never reached.
type Timing struct {
	Created, Publish, Activate, Inactive, Delete, SyncPublish, SyncDelete time.Time
}

// The algorithms Meridian signs with.
var algorithms = map[uint8]string{dns.ECDSAP256SHA256: "ECDSAP256SHA256", dns.ED25519: "ED25519"}

// SEP reports whether the key has the Secure Entry Point flag: a KSK, or a CSK.
func (k *Key) SEP() bool { return k.DNSKEY.Flags&dns.SEP != 0 }

// Algorithm returns the key's algorithm's name (ECDSAP256SHA256, ED25519).
func (k *Key) Algorithm() string { return algorithms[k.DNSKEY.Algorithm] }

// ReadKey reads the key pair named by path: the base name of a BIND key pair
// (Kexample.org.+013+45330), or the name of its .key or .private file, as CoreDNS's dnssec
// plugin takes them. Only algorithms 13 (ECDSA P-256) and 15 (Ed25519) are accepted, and the
// private key must be the public key's.
func ReadKey(path string) (*Key, error) {
	base := strings.TrimSuffix(strings.TrimSuffix(path, ".key"), ".private")
	pub, err := os.ReadFile(base + ".key")
	if err != nil {
		return nil, fmt.Errorf("dnssec key: %w", err)
	}
	rr, err := firstRR(string(pub), base+".key")
	if err != nil {
		return nil, err
	}
	dnskey, ok := rr.(*dns.DNSKEY)
	if !ok {
		return nil, fmt.Errorf("dnssec key %s.key: the first record is %s, not a DNSKEY", base, dns.TypeToString[rr.Header().Rrtype])
	}
	if _, ok := algorithms[dnskey.Algorithm]; !ok {
		return nil, fmt.Errorf("dnssec key %s.key: algorithm %d (%s) is not supported: use 13 (ECDSAP256SHA256) or 15 (ED25519)",
			base, dnskey.Algorithm, dns.AlgorithmToString[dnskey.Algorithm])
	}
	if dnskey.Protocol != 3 || dnskey.Flags&dns.ZONE == 0 {
		return nil, fmt.Errorf("dnssec key %s.key: not a zone key (flags %d, protocol %d)", base, dnskey.Flags, dnskey.Protocol)
	}
	f, err := os.Open(base + ".private")
	if err != nil {
		return nil, fmt.Errorf("dnssec key: %w", err)
	}
	defer f.Close()
	priv, err := dnskey.ReadPrivateKey(f, base+".private")
	if err != nil {
		return nil, fmt.Errorf("dnssec key %s.private: %w", base, err)
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("dnssec key %s.private: not a signing key", base)
	}
	k := &Key{DNSKEY: dnskey, signer: signer, Tag: dnskey.KeyTag(), File: base}
	if err := k.checkPair(); err != nil {
		return nil, fmt.Errorf("dnssec key %s: %w", base, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return nil, fmt.Errorf("dnssec key %s.private: %w", base, err)
	}
	if k.Timing, err = readTiming(f); err != nil {
		return nil, fmt.Errorf("dnssec key %s.private: %w", base, err)
	}
	return k, nil
}

// firstRR returns the first resource record of a key file's text.
func firstRR(text, file string) (dns.RR, error) {
	zp := dns.NewZoneParser(strings.NewReader(text), "", file)
	rr, ok := zp.Next()
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("dnssec key: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("dnssec key %s: no record", file)
	}
	return rr, nil
}

// checkPair signs a record with the private key and verifies it with the public one: a .key
// and a .private file of two different keys fail here, not in a validator.
func (k *Key) checkPair() error {
	probe := &dns.TXT{Hdr: dns.RR_Header{Name: k.DNSKEY.Hdr.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 1}, Txt: []string{"probe"}}
	sig := &dns.RRSIG{Algorithm: k.DNSKEY.Algorithm, KeyTag: k.Tag, SignerName: k.DNSKEY.Hdr.Name, Inception: 1, Expiration: 2}
	if err := signRRset(k.signer, sig, []dns.RR{probe}); err != nil {
		return fmt.Errorf("signing with the private key: %w", err)
	}
	if err := sig.Verify(k.DNSKEY, []dns.RR{probe}); err != nil {
		return errors.New("the private key (.private) is not the public key's (.key)")
	}
	return nil
}

// timingFields are the timing metadata lines of a BIND .private file, by their name there.
var timingFields = map[string]func(*Timing) *time.Time{
	"Created":     func(t *Timing) *time.Time { return &t.Created },
	"Publish":     func(t *Timing) *time.Time { return &t.Publish },
	"Activate":    func(t *Timing) *time.Time { return &t.Activate },
	"Inactive":    func(t *Timing) *time.Time { return &t.Inactive },
	"Delete":      func(t *Timing) *time.Time { return &t.Delete },
	"SyncPublish": func(t *Timing) *time.Time { return &t.SyncPublish },
	"SyncDelete":  func(t *Timing) *time.Time { return &t.SyncDelete },
}

// bindTime is the layout of BIND's timing metadata: UTC, to the second.
const bindTime = "20060102150405"

// readTiming reads the timing metadata lines ("Activate: 20260101000000") of a .private file.
// Files without them (ldns-keygen's, dnssec-keygen's with no -P/-A) have zero times.
func readTiming(f *os.File) (Timing, error) {
	var t Timing
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), ":")
		field := timingFields[strings.TrimSpace(name)]
		if !ok || field == nil {
			continue
		}
		v, err := time.Parse(bindTime, strings.TrimSpace(value))
		if err != nil {
			return Timing{}, fmt.Errorf("%s: %q is not a time such as %s", name, strings.TrimSpace(value), bindTime)
		}
		*field(&t) = v
	}
	return t, s.Err()
}

// State is where a key is in its life at a moment, from its timing metadata.
type State string

// The states of a key.
const (
	// StateCreated: not published yet.
	StateCreated State = "created"
	// StatePublished: in the DNSKEY RRset, not signing (a successor waiting, pre-publication).
	StatePublished State = "published"
	// StateActive: in the DNSKEY RRset and signing.
	StateActive State = "active"
	// StateRetired: in the DNSKEY RRset, no longer signing (its signatures age out of caches).
	StateRetired State = "retired"
	// StateRemoved: out of the DNSKEY RRset.
	StateRemoved State = "removed"
)

// reached reports whether the time t is set and not after now.
func reached(t, now time.Time) bool { return !t.IsZero() && !t.After(now) }

// StateAt returns the key's state at now.
func (k *Key) StateAt(now time.Time) State {
	t := &k.Timing
	switch {
	case reached(t.Delete, now):
		return StateRemoved
	case !t.Publish.IsZero() && t.Publish.After(now) && (t.Activate.IsZero() || t.Activate.After(now)):
		return StateCreated
	case reached(t.Inactive, now):
		return StateRetired
	case !t.Activate.IsZero() && t.Activate.After(now):
		return StatePublished
	}
	return StateActive
}

// published reports whether the key is in the DNSKEY RRset at now.
func (k *Key) published(now time.Time) bool {
	s := k.StateAt(now)
	return s == StatePublished || s == StateActive || s == StateRetired
}

// inSync reports whether the key is in the CDS and CDNSKEY RRsets at now: between its
// SyncPublish and SyncDelete times when it has them; otherwise while it is published and not
// retired (a successor KSK is announced to the parent from its publication on).
func (k *Key) inSync(now time.Time) bool {
	t := &k.Timing
	if !t.SyncPublish.IsZero() || !t.SyncDelete.IsZero() {
		return (t.SyncPublish.IsZero() || reached(t.SyncPublish, now)) && !reached(t.SyncDelete, now)
	}
	s := k.StateAt(now)
	return s == StatePublished || s == StateActive
}

// events returns the key's timing metadata that change its state.
func (k *Key) events() []time.Time {
	t := &k.Timing
	return []time.Time{t.Publish, t.Activate, t.Inactive, t.Delete, t.SyncPublish, t.SyncDelete}
}
