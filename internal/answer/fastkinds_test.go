package answer

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// fastKindNames are names of every kind the fast path's test zone holds, with the kind of
// answer each gives an address query (the other types get NODATA, a static RRset, a referral
// or an SRV or service answer).
var fastKindNames = []string{
	"example.org.",                  // the apex: a GSLB record, SOA, NS, static MX, TXT, CAA
	"www.example.org.",              // failover, a static TXT beside it
	"hashed.example.org.",           // ip-hash
	"consistent.example.org.",       // consistent-hash
	"geo.example.org.",              // geoip
	"chain.example.org.",            // chain
	"checked.example.org.",          // failover, a backend down
	"specific.example.org.",         // fail-specific addresses
	"specificcname.example.org.",    // the fallback CNAME
	"closed.example.org.",           // fail-closed (REFUSED)
	"cdn.example.org.",              // a host name first: CNAME
	"hostlater.example.org.",        // a host name after an address: left out
	"v4only.example.org.",           // NODATA for AAAA
	"foo.app.example.org.",          // a wildcard
	"a.b.app.example.org.",          // a wildcard, deeper
	"exact_name-1.app.example.org.", // an exact name beside the wildcard
	"app.example.org.",              // an empty non-terminal
	"many.example.org.",             // 20 backends
	"mail.example.org.",             // static A
	"v6.example.org.",               // static AAAA
	"alias.example.org.",            // static CNAME
	"upper.example.org.",            // static CNAME to a mixed-case target
	"svc.example.org.",              // static HTTPS and SVCB
	"_sip._tcp.example.org.",        // static SRV
	"ptr.example.org.",              // static PTR
	"sub.example.org.",              // a delegation
	"ns1.sub.example.org.",          // its glue
	"deep.below.sub.example.org.",   // below it
	"gsub.example.org.",             // a delegation with a GSLB record among its glue
	"x.gsub.example.org.",
	"gslb-ns.example.org.",
	"srv.example.org.",         // SRV of addresses and a host name
	"https.example.org.",       // HTTPS and SVCB with ALPN, port and hints
	"alias-https.example.org.", // HTTPS in alias mode
	"nope.example.org.",        // NXDOMAIN
	"nope.www.example.org.",    // NXDOMAIN below a record
	"localtargets-www.example.org.",
	"a.very.long.name.with.many.labels.to.fill.the.packet.example.org.",
	"weighted.example.org.", // the random and rotating modes
	"rr.example.org.",
	"bigrr.example.org.",
	"random.example.org.",
}

// fastKindTypes are the query types asked of every name.
var fastKindTypes = []uint16{
	dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeSOA, dns.TypeNS, dns.TypeMX, dns.TypeTXT,
	dns.TypeSRV, dns.TypeHTTPS, dns.TypeSVCB, dns.TypePTR, dns.TypeCAA, dns.TypeDNSKEY, dns.TypeNSEC,
	dns.TypeANY, dns.TypeDS, 65280, // a private type
}

// fastKindVariants are the ways each question is asked: plain, EDNS with DO and CD, a small
// buffer, Client Subnet (v4 and v6, prefix 0), over TCP, in upper case.
var fastKindVariants = []struct {
	name string
	edit func(c *fastCase)
}{
	{"plain", func(*fastCase) {}},
	{"edns do cd", func(c *fastCase) { c.edns, c.do, c.cd = 1232, true, true }},
	{"edns 512", func(c *fastCase) { c.edns = 512 }},
	{"ecs v4", func(c *fastCase) { c.ecs, c.useECS = subnet(1, 24, "198.51.100.0"), true }},
	{"ecs v6 do", func(c *fastCase) { c.ecs, c.useECS, c.do = subnet(2, 56, "2001:db8:77::"), true, true }},
	{"ecs /0", func(c *fastCase) { c.ecs, c.useECS = subnet(1, 0, "0.0.0.0"), true }},
	{"ecs not used", func(c *fastCase) { c.ecs = subnet(1, 24, "198.51.100.0") }},
	{"tcp", func(c *fastCase) { c.tcp = true }},
	{"tcp edns do", func(c *fastCase) { c.tcp, c.edns, c.do = true, 1232, true }},
	{"upper case", func(c *fastCase) { c.qname = strings.ToUpper(c.qname) }},
}

// randomNames are the names whose answers are drawn or rotate: each path's answers are
// compared as sets over many trials (TestAppendFastMatchesRespond explains the count).
var randomNames = map[string]bool{
	"weighted.example.org.": true, "rr.example.org.": true, "bigrr.example.org.": true, "random.example.org.": true,
}

// TestAppendFastEveryKind asks every name of fastKindNames every type of fastKindTypes in
// every variant, both ways: whatever the fast path answers must be byte for byte what Respond
// answers (as sets of answers for the random names), and the fast path must answer every
// question but those it leaves to Respond by design (ANY, DS, TXT with enable_txt, answers
// that do not fit), which TestAppendFastLeavesQueriesToRespond lists. It reports how many of
// each rcode and section shape it compared, so that a zone change that loses a kind shows.
func TestAppendFastEveryKind(t *testing.T) {
	snap, sources := fastSnapshot(t, true)
	compareEveryKind(t, snap, sources, func(fastCase) bool { return false }, func(fastCase) bool { return false })
}

// TestAppendFastEveryKindSigned is TestAppendFastEveryKind in the zone signed by Meridian's
// signer: the fast path leaves the queries of the types the signer answers (DNSKEY, NSEC) to
// Respond; it may leave those with the DO bit (those that need a signature made for the query,
// or a referral), and whatever it answers with DO, signatures and NSEC records included, is
// byte for byte Respond's. Every kind it answers from prepared signatures is among those
// compared with DO: positive answers, NODATA, fail-closed and referrals.
func TestAppendFastEveryKindSigned(t *testing.T) {
	snap, sources := fastSnapshotSigned(t, true, signerOf(t, testSigning))
	seenDO := compareEveryKind(t, snap, sources, func(c fastCase) bool { return keyType(c.qtype) }, func(c fastCase) bool { return c.do })
	for _, want := range []string{"NOERROR an", "NOERROR ns", "REFUSED ns", "NOERROR ns+ar (referral)"} {
		if seenDO[want] == 0 {
			t.Errorf("no signed answer of the shape %q compared: %v", want, seenDO)
		}
	}
	t.Logf("signed answers compared, by shape: %v", seenDO)
}

// compareEveryKind asks snap every kind of question both ways, as TestAppendFastEveryKind says;
// the fast path must leave the questions slow names to Respond, and may leave those may names.
// It returns how many answers to DO queries it compared, by shape.
func compareEveryKind(t *testing.T, snap *catalog.Snapshot, sources *geo.Sources, slow, may func(fastCase) bool) map[string]int {
	t.Helper()
	seen, seenDO := map[string]int{}, map[string]int{}
	for _, name := range fastKindNames {
		for _, qtype := range fastKindTypes {
			for _, v := range fastKindVariants {
				c := fastCase{qname: name, qtype: qtype}
				v.edit(&c)
				opts := Options{UseECS: c.useECS}
				pkt := c.packet(t)
				trials := 1
				if randomNames[name] {
					trials = 200
				}
				fast, slowWires := map[string]bool{}, map[string]bool{}
				for range trials {
					out, handled := AppendFast(nil, snap, &opts, pkt, c.client(), c.tcp, sources, time.Time{})
					wire, answered := slowWire(t, snap, opts, pkt, c.client(), c.tcp, sources)
					if handled && (!answered || slow(c)) || !handled && !slow(c) && !may(c) && mustHandle(c, wire, answered) {
						t.Errorf("%s (%s): handled %v, answered by Respond %v:\n%s", c, v.name, handled, answered, unpacked(string(wire)))
						break
					}
					if handled {
						fast[string(out)] = true
						slowWires[string(wire)] = true
					}
				}
				for wire := range fast {
					if !slowWires[wire] {
						t.Errorf("%s (%s): fast path\n%s\nnot among Respond's:\n%s", c, v.name, unpacked(wire), unpackedSet(slowWires))
					}
					seen[shape(wire)]++
					if c.do {
						seenDO[shape(wire)]++
					}
				}
				for wire := range slowWires {
					if !fast[wire] {
						t.Errorf("%s (%s): Respond's\n%s\nnever given by the fast path", c, v.name, unpacked(wire))
					}
				}
			}
		}
	}
	for _, want := range []string{"NOERROR an", "NOERROR ns", "NXDOMAIN ns", "REFUSED ns", "NOERROR ns+ar (referral)", "NOERROR an+ar"} {
		if seen[want] == 0 {
			t.Errorf("no answer of the shape %q compared: %v", want, seen)
		}
	}
	t.Logf("answers compared, by shape: %v", seen)
	return seenDO
}

// mustHandle reports whether the fast path must answer c, which Respond answered (answered)
// with wire: every question but ANY, DS and those whose uncompressed answer does not fit, or
// may not (a rotation of more backends than the client's buffer holds must not turn).
func mustHandle(c fastCase, wire []byte, answered bool) bool {
	if !answered || c.qtype == dns.TypeANY || c.qtype == dns.TypeDS || c.ecs != nil && !c.useECS ||
		strings.EqualFold(c.qname, "bigrr.example.org.") && !c.tcp && c.edns < advertisedUDPSize {
		return false
	}
	m := new(dns.Msg)
	if m.Unpack(wire) != nil {
		return false
	}
	m.Compress = false
	uncompressed, err := m.Pack()
	return err == nil && !m.Truncated && bytes.Equal(uncompressed, wire) && len(wire) <= maxFastTCP
}

// shape names the rcode and the sections a response fills, for TestAppendFastEveryKind's
// count.
func shape(wire string) string {
	m := new(dns.Msg)
	if m.Unpack([]byte(wire)) != nil {
		return "unpackable"
	}
	var parts []string
	if len(m.Answer) > 0 {
		parts = append(parts, "an")
	}
	if len(m.Ns) > 0 {
		parts = append(parts, "ns")
	}
	if len(m.Extra) > 0 && (len(m.Extra) > 1 || m.IsEdns0() == nil) {
		parts = append(parts, "ar")
	}
	s := fmt.Sprintf("%s %s", dns.RcodeToString[m.Rcode], strings.Join(parts, "+"))
	if !m.Authoritative && len(m.Ns) > 0 {
		s += " (referral)"
	}
	return s
}

// TestAppendFastDoesNotCompress: every answer the fast path gives is uncompressed, as miekg/dns
// packs a message that fits, so that equal bytes mean equal answers and not the same
// compression choices.
func TestAppendFastDoesNotCompress(t *testing.T) {
	snap, sources := fastSnapshot(t, false)
	for _, name := range fastKindNames {
		pkt := fastCase{qname: name, qtype: dns.TypeA, edns: 1232}.packet(t)
		out, handled := AppendFast(nil, snap, &Options{}, pkt, testClient, false, sources, time.Time{})
		if !handled {
			continue
		}
		m := new(dns.Msg)
		if err := m.Unpack(out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m.Compress = false
		again, err := m.Pack()
		if err != nil || !bytes.Equal(again, out) {
			t.Errorf("%s: the answer is not as miekg/dns packs it uncompressed (%v)", name, err)
		}
	}
}
