package answer

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// FuzzAppendFast feeds arbitrary packets to the fast path, over the zone of deterministic
// records (the random ones could not be compared), over UDP or TCP, with or without
// use_edns_csubnet, from an IPv4 or IPv6 client, unsigned or signed by Meridian's signer: it
// never panics, and whatever it answers miekg/dns unpacks, and Respond answers with the same
// bytes (in the signed zone, DO queries included: the signatures and NSEC records the fast path
// copies are Respond's, and it leaves those Respond signs on demand). The seeds are queries of
// every kind TestAppendFastEveryKind asks, and, with the DO bit (and the Compact Answers OK
// flag), those the signed zone answers from prepared signatures.
func FuzzAppendFast(f *testing.F) {
	plain, sources := fastSnapshot(f, false)
	signed, _ := fastSnapshotSigned(f, false, signerOf(f, testSigning))
	seeds := []fastCase{
		{qname: "www.example.org.", qtype: dns.TypeA},
		{qname: "WwW.example.org.", qtype: dns.TypeAAAA, edns: 1232, do: true, cd: true},
		{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "198.51.100.0")},
		{qname: "hashed.example.org.", qtype: dns.TypeAAAA, ecs: subnet(2, 56, "2001:db8:77::")},
		{qname: "hashed.example.org.", qtype: dns.TypeA, ecs: &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET}},
		{qname: "consistent.example.org.", qtype: dns.TypeA, ecs: subnet(1, 20, "198.51.96.0")},
		{qname: "geo.example.org.", qtype: dns.TypeA, ecs: subnet(1, 24, "10.99.1.0")},
		{qname: "chain.example.org.", qtype: dns.TypeA, edns: 600},
		{qname: "specific.example.org.", qtype: dns.TypeAAAA},
		{qname: "many.example.org.", qtype: dns.TypeA, edns: 1232},
		{qname: "cdn.example.org.", qtype: dns.TypeA},
		{qname: "cdn.example.org.", qtype: dns.TypeCNAME},
		{qname: "specificcname.example.org.", qtype: dns.TypeA},
		{qname: "closed.example.org.", qtype: dns.TypeA, edns: 1232},
		{qname: "foo.app.example.org.", qtype: dns.TypeA},
		{qname: "app.example.org.", qtype: dns.TypeTXT},
		{qname: "host.sub.example.org.", qtype: dns.TypeA},
		{qname: "x.gsub.example.org.", qtype: dns.TypeAAAA, edns: 1232, do: true},
		{qname: "nope.example.org.", qtype: dns.TypeA},
		{qname: "v4only.example.org.", qtype: dns.TypeAAAA, ecs: subnet(1, 24, "198.51.100.0")},
		{qname: "example.org.", qtype: dns.TypeSOA},
		{qname: "example.org.", qtype: dns.TypeNS, edns: 512},
		{qname: "example.org.", qtype: dns.TypeMX},
		{qname: "www.example.org.", qtype: dns.TypeTXT},
		{qname: "upper.example.org.", qtype: dns.TypeA},
		{qname: "svc.example.org.", qtype: dns.TypeHTTPS},
		{qname: "_sip._tcp.example.org.", qtype: dns.TypeSRV},
		{qname: "srv.example.org.", qtype: dns.TypeSRV, edns: 1232},
		{qname: "https.example.org.", qtype: dns.TypeHTTPS},
		{qname: "alias-https.example.org.", qtype: dns.TypeSVCB},
		{qname: "www.example.org.", qtype: 65280},
		{qname: "example.org.", qtype: dns.TypeDNSKEY},
		{qname: "www.example.org.", qtype: dns.TypeNSEC, edns: 1232},
	}
	for _, c := range seeds {
		f.Add(c.packet(f), true, false, false, false)
		f.Add(c.packet(f), false, true, true, true)
		c.edns, c.do = 1232, true
		pkt := c.packet(f)
		f.Add(pkt, true, false, false, true)
		if c.ecs == nil {
			pkt[len(pkt)-4] |= ednsCO >> 8 // the OPT record's flags, the last of the packet
			f.Add(pkt, false, false, false, true)
		}
	}
	f.Add([]byte{}, false, true, false, false)
	f.Add(guardPacket(f, "www.example.org.", dns.TypeA, []byte{1, 2, 3, 4, 5, 6, 7, 8}, true), true, false, false, false)
	f.Add(guardPacket(f, "nope.example.org.", dns.TypeA, make([]byte, 24), false), false, true, false, true)
	v4, v6 := testClient, netip.MustParseAddr("2001:db8:aa::1")
	f.Fuzz(func(t *testing.T, pkt []byte, useECS, fromV6, tcp, sign bool) {
		snap := plain
		if sign {
			snap = signed
		}
		src := v4
		if fromV6 {
			src = v6
		}
		opts := Options{UseECS: useECS}
		in := bytes.Clone(pkt)
		out, handled := AppendFast(nil, snap, &opts, pkt, src, tcp, sources, time.Time{})
		if !bytes.Equal(in, pkt) {
			t.Fatal("the query changed")
		}
		if !handled {
			if len(out) != 0 {
				t.Fatalf("%d bytes appended to a query not handled", len(out))
			}
			return
		}
		wire, ok := slowWire(t, snap, opts, pkt, src, tcp, sources)
		if !ok {
			t.Fatalf("handled a query that miekg/dns does not unpack or Respond passes on: %x", pkt)
		}
		if !bytes.Equal(out, wire) {
			t.Fatalf("query %x\nfast path %s\nRespond   %s", pkt, unpacked(string(out)), unpacked(string(wire)))
		}
	})
}
