package answer

import (
	"bytes"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestAppendFastSignsPrepared: in the zone signed by Meridian's signer, the fast path answers
// the DO queries whose answers were signed ahead, each RRset followed by its signatures, byte
// for byte as Respond does, and leaves to Respond those that need a signature made for the
// query or a proof it does not copy.
func TestAppendFastSignsPrepared(t *testing.T) {
	snap, sources := fastSnapshotSigned(t, true, signerOf(t, testSigning))
	for _, c := range []struct {
		q       fastCase
		handled bool
		// rrsigs is how many RRSIG records the answer holds.
		rrsigs int
		// co sets the Compact Answers OK flag, which the answer echoes.
		co bool
	}{
		{fastCase{qname: "www.example.org.", qtype: dns.TypeA}, true, 1, false},              // failover
		{fastCase{qname: "WWW.example.org.", qtype: dns.TypeAAAA, cd: true}, true, 1, false}, // the query's case
		{fastCase{qname: "www.example.org.", qtype: dns.TypeAAAA}, true, 1, true},            // CO echoed
		{fastCase{qname: "www.example.org.", qtype: dns.TypeTXT}, true, 1, true},             // static TXT beside the record
		{fastCase{qname: "rr.example.org.", qtype: dns.TypeA}, true, 1, false},               // a rotation
		{fastCase{qname: "weighted.example.org.", qtype: dns.TypeA}, true, 1, false},         // a draw
		{fastCase{qname: "hashed.example.org.", qtype: dns.TypeA, useECS: true, ecs: subnet(1, 24, "198.51.100.0")}, true, 1, false},
		{fastCase{qname: "geo.example.org.", qtype: dns.TypeA, useECS: true, ecs: subnet(1, 24, "198.51.100.0")}, true, 1, false},
		{fastCase{qname: "cdn.example.org.", qtype: dns.TypeA}, true, 1, false},              // a host name: CNAME
		{fastCase{qname: "specific.example.org.", qtype: dns.TypeAAAA}, true, 1, false},      // fallback addresses
		{fastCase{qname: "specificcname.example.org.", qtype: dns.TypeA}, true, 1, false},    // the fallback CNAME
		{fastCase{qname: "example.org.", qtype: dns.TypeSOA}, true, 1, false},                // the apex
		{fastCase{qname: "example.org.", qtype: dns.TypeNS}, true, 1, false},                 //
		{fastCase{qname: "example.org.", qtype: dns.TypeMX}, true, 1, false},                 // static
		{fastCase{qname: "mail.example.org.", qtype: dns.TypeA}, true, 1, false},             //
		{fastCase{qname: "v4only.example.org.", qtype: dns.TypeAAAA}, true, 2, false},        // NODATA: SOA and NSEC
		{fastCase{qname: "www.example.org.", qtype: dns.TypeMX}, true, 2, false},             //
		{fastCase{qname: "app.example.org.", qtype: dns.TypeA}, true, 2, false},              // an empty non-terminal
		{fastCase{qname: "closed.example.org.", qtype: dns.TypeA}, true, 1, false},           // fail-closed
		{fastCase{qname: "nope.example.org.", qtype: dns.TypeA}, false, 0, false},            // NXDOMAIN: denial made for the name
		{fastCase{qname: "foo.app.example.org.", qtype: dns.TypeA}, true, 2, false},          // a wildcard: renamed, and the covering NSEC
		{fastCase{qname: "a.b.app.example.org.", qtype: dns.TypeA}, true, 2, false},          //
		{fastCase{qname: "foo.app.example.org.", qtype: dns.TypeMX}, true, 3, false},         // a wildcard's NODATA
		{fastCase{qname: "x.gsub.example.org.", qtype: dns.TypeA}, true, 1, false},           // a referral: NSEC of the insecure cut
		{fastCase{qname: "deep.below.sub.example.org.", qtype: dns.TypeA}, true, 1, false},   // a referral: the cut's DS
		{fastCase{qname: "srv.example.org.", qtype: dns.TypeSRV}, false, 0, false},           // signed on demand
		{fastCase{qname: "chain.example.org.", qtype: dns.TypeA}, true, 1, false},            // a chain that does not rotate
		{fastCase{qname: "many.example.org.", qtype: dns.TypeA, edns: 512}, false, 0, false}, // does not fit
		{fastCase{qname: "example.org.", qtype: dns.TypeDNSKEY}, false, 0, false},            // the signer's
	} {
		c.q.do = true
		if c.q.edns == 0 {
			c.q.edns = 1232
		}
		pkt := c.q.packet(t)
		if c.co {
			pkt[len(pkt)-4] |= ednsCO >> 8 // the OPT record's flags, the last of the packet
		}
		out, handled := AppendFast(nil, snap, &Options{UseECS: c.q.useECS}, pkt, c.q.client(), false, sources, time.Time{})
		if handled != c.handled {
			t.Errorf("%s: handled %v, want %v", c.q, handled, c.handled)
			continue
		}
		if !handled {
			continue
		}
		if c.q.qname == "rr.example.org." || c.q.qname == "weighted.example.org." {
			// Respond turns the rotation, or draws, again: compare the RRSIGs' presence only,
			// TestAppendFastEveryKindSigned compares the bytes as sets.
		} else if wire, _ := slowWire(t, snap, Options{UseECS: c.q.useECS}, pkt, c.q.client(), false, sources); !bytes.Equal(out, wire) {
			t.Errorf("%s: fast path\n%s\nRespond\n%s", c.q, unpacked(string(out)), unpacked(string(wire)))
		}
		m := new(dns.Msg)
		if err := m.Unpack(out); err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		n := 0
		for _, rr := range append(m.Answer, m.Ns...) {
			if rr.Header().Rrtype == dns.TypeRRSIG {
				n++
			}
		}
		if opt := m.IsEdns0(); n != c.rrsigs || opt == nil || !opt.Do() || c.co != (opt.Hdr.Ttl&ednsCO != 0) {
			t.Errorf("%s: %d RRSIGs (want %d), DO %v:\n%s", c.q, n, c.rrsigs, m.IsEdns0() != nil && m.IsEdns0().Do(), m)
		}
	}
}

// signedSlow reports whether the fast path leaves c, a DO query of
// TestAppendFastAllocatesNothing in the signed zone, to Respond: NXDOMAIN, SRV and HTTPS.
func signedSlow(c fastCase) bool {
	return c.qname == "nope.example.org." || c.qtype == dns.TypeSRV || c.qtype == dns.TypeHTTPS
}
