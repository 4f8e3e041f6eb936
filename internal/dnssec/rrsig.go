package dnssec

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// signRRset completes sig (its algorithm, key tag, signer name, inception and expiration set,
// its TTL the RRset's) as a signature of rrset by signer (RFC 4034 3.1.8.1): the type covered,
// the labels (a wildcard owner's less its "*"), the original TTL and the signature. It is
// miekg/dns's RRSIG.Sign for the algorithms Meridian signs with, without its 4 KiB buffer per
// signature: a zone is signed whole at once, and the garbage was a fifth of the time.
func signRRset(signer crypto.Signer, sig *dns.RRSIG, rrset []dns.RR) error {
	h := rrset[0].Header()
	sig.Hdr.Name, sig.Hdr.Rrtype, sig.Hdr.Class = h.Name, dns.TypeRRSIG, h.Class
	sig.TypeCovered, sig.OrigTtl = h.Rrtype, h.Ttl
	sig.Labels = uint8(dns.CountLabel(h.Name))
	if strings.HasPrefix(h.Name, "*.") {
		sig.Labels--
	}
	data, err := signedData(sig, rrset)
	if err != nil {
		return err
	}
	var raw []byte
	switch k := signer.(type) {
	case ed25519.PrivateKey:
		raw = ed25519.Sign(k, data)
	case *ecdsa.PrivateKey:
		digest := sha256.Sum256(data)
		der, err := ecdsa.SignASN1(rand.Reader, k, digest[:])
		if err != nil {
			return err
		}
		if raw, err = rawECDSA(der, 32); err != nil {
			return err
		}
	default:
		return fmt.Errorf("dnssec: a %T key does not sign", signer)
	}
	sig.Signature = base64.StdEncoding.EncodeToString(raw)
	return nil
}

// signedData returns what a signature signs (RFC 4034 3.1.8.1): the RRSIG's RDATA without its
// signature, then the RRset in canonical form and order (RFC 4034 6), repeats once.
func signedData(sig *dns.RRSIG, rrset []dns.RR) ([]byte, error) {
	signer := make([]byte, 256)
	n, err := dns.PackDomainName(dns.CanonicalName(sig.SignerName), signer, 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("dnssec: signer name %q: %w", sig.SignerName, err)
	}
	out := make([]byte, 0, 18+n+64*len(rrset))
	out = binary.BigEndian.AppendUint16(out, sig.TypeCovered)
	out = append(out, sig.Algorithm, sig.Labels)
	out = binary.BigEndian.AppendUint32(out, sig.OrigTtl)
	out = binary.BigEndian.AppendUint32(out, sig.Expiration)
	out = binary.BigEndian.AppendUint32(out, sig.Inception)
	out = binary.BigEndian.AppendUint16(out, sig.KeyTag)
	out = append(out, signer[:n]...)
	wires := make([][]byte, len(rrset))
	for i, rr := range rrset {
		if wires[i], err = canonicalWire(rr, sig.OrigTtl); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(wires, bytes.Compare)
	for i, w := range wires {
		if i == 0 || !bytes.Equal(w, wires[i-1]) {
			out = append(out, w...)
		}
	}
	return out, nil
}

// canonicalWire returns rr in canonical form (RFC 4034 6.2, RFC 6840 5.1): its owner and the
// names in the RDATA of the types that have them lower-cased, the TTL ttl, uncompressed.
func canonicalWire(rr dns.RR, ttl uint32) ([]byte, error) {
	c := lowered(rr)
	c.Header().Ttl = ttl
	buf := make([]byte, dns.Len(c)+1)
	off, err := dns.PackRR(c, buf, 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("dnssec: %s: %w", rr.Header().Name, err)
	}
	return buf[:off], nil
}

// lowered returns a copy of rr with its owner, and the names of its RDATA that canonical
// form lower-cases, in lower case.
func lowered(rr dns.RR) dns.RR {
	c := dns.Copy(rr)
	c.Header().Name = dns.CanonicalName(c.Header().Name)
	switch x := c.(type) {
	case *dns.NS:
		x.Ns = dns.CanonicalName(x.Ns)
	case *dns.CNAME:
		x.Target = dns.CanonicalName(x.Target)
	case *dns.SOA:
		x.Ns, x.Mbox = dns.CanonicalName(x.Ns), dns.CanonicalName(x.Mbox)
	case *dns.PTR:
		x.Ptr = dns.CanonicalName(x.Ptr)
	case *dns.MX:
		x.Mx = dns.CanonicalName(x.Mx)
	case *dns.SRV:
		x.Target = dns.CanonicalName(x.Target)
	case *dns.DNAME:
		x.Target = dns.CanonicalName(x.Target)
	case *dns.NAPTR:
		x.Replacement = dns.CanonicalName(x.Replacement)
	case *dns.KX:
		x.Exchanger = dns.CanonicalName(x.Exchanger)
	case *dns.RP:
		x.Mbox, x.Txt = dns.CanonicalName(x.Mbox), dns.CanonicalName(x.Txt)
	case *dns.AFSDB:
		x.Hostname = dns.CanonicalName(x.Hostname)
	case *dns.RT:
		x.Host = dns.CanonicalName(x.Host)
	case *dns.MINFO:
		x.Rmail, x.Email = dns.CanonicalName(x.Rmail), dns.CanonicalName(x.Email)
	case *dns.PX:
		x.Map822, x.Mapx400 = dns.CanonicalName(x.Map822), dns.CanonicalName(x.Mapx400)
	}
	return c
}

// rawECDSA returns an ECDSA signature in ASN.1 DER as DNSSEC writes it (RFC 6605 4): r and s,
// size bytes each.
func rawECDSA(der []byte, size int) ([]byte, error) {
	var r, s []byte
	in := cryptobyte.String(der)
	var seq cryptobyte.String
	if !in.ReadASN1(&seq, asn1.SEQUENCE) || !seq.ReadASN1Integer(&r) || !seq.ReadASN1Integer(&s) {
		return nil, errors.New("dnssec: a malformed ECDSA signature")
	}
	out := make([]byte, 2*size)
	for i, v := range [][]byte{r, s} {
		v = bytes.TrimLeft(v, "\x00")
		if len(v) > size {
			return nil, errors.New("dnssec: an ECDSA signature too long")
		}
		copy(out[(i+1)*size-len(v):(i+1)*size], v)
	}
	return out, nil
}
