package answer

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// signerOf returns a signer of example.org. with a KSK and a ZSK (Ed25519) and opts.
func signerOf(t testing.TB, opts dnssec.Options) *dnssec.Signer {
	t.Helper()
	return signerOfAlgorithm(t, 0, opts)
}

// signerOfAlgorithm is signerOf with keys of algorithm alg (0: WriteKey's default).
func signerOfAlgorithm(t testing.TB, alg uint8, opts dnssec.Options) *dnssec.Signer {
	t.Helper()
	dir := t.TempDir()
	var keys []*dnssec.Key
	for _, ksk := range []bool{true, false} {
		k, err := dnssec.ReadKey(testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "example.org", KSK: ksk, Algorithm: alg}).Base)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	ks, err := dnssec.NewKeyset(keys)
	if err != nil {
		t.Fatal(err)
	}
	return dnssec.NewSigner("example.org.", ks, opts)
}

// testSigning are the signer's options in the tests.
var testSigning = dnssec.Options{Validity: 14 * 24 * time.Hour, Refresh: 5 * 24 * time.Hour, InceptionOffset: time.Hour, KeyTTL: 300, CacheCapacity: 1024, SignRate: 100000}

// signedSnapshot compiles yaml, the zone example.org., signed by signer as the engine's load
// signs it.
func signedSnapshot(t testing.TB, yaml string, signer *dnssec.Signer) (*catalog.Snapshot, states) {
	t.Helper()
	z, err := config.ParseZone("example.org.yml", []byte(yaml), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	hs := states{}
	return signedBuild(t, z, hs, signer), hs
}

// signedBuild compiles z with the health words of hs, signed by signer as the engine's load
// signs it.
func signedBuild(t testing.TB, z *config.Zone, hs states, signer *dnssec.Signer) *catalog.Snapshot {
	t.Helper()
	snap, err := catalog.BuildUnviewed([]*config.Zone{z}, hs)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Sign(map[string]*dnssec.Signer{"example.org.": signer}, ViewSigner{}, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Records() {
		r.Refresh()
	}
	snap.CarryDone()
	return snap
}

// askDO asks name/qtype with the DO bit (and the Compact Answers OK flag with co), over UDP.
func askDO(snap *catalog.Snapshot, name string, qtype uint16, co bool) (*dns.Msg, Result) {
	return askDOOver(snap, name, qtype, co, false)
}

// askDOOver is askDO over TCP with tcp.
func askDOOver(snap *catalog.Snapshot, name string, qtype uint16, co, tcp bool) (*dns.Msg, Result) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, true)
	if co {
		m.IsEdns0().Hdr.Ttl |= ednsCO
	}
	return Respond(snap, Options{}, Query{Msg: m, Source: testClient, TCP: tcp})
}

// verified checks, as a validator would, that every RRset of the answer and authority sections
// of r (but a referral's NS) has a signature that verifies with a key of keys and is valid
// now, and returns the NSEC records of the authority section.
func verified(t *testing.T, r *dns.Msg, keys []dns.RR) []*dns.NSEC {
	t.Helper()
	type set struct {
		name string
		t    uint16
	}
	var nsecs []*dns.NSEC
	for _, section := range [][]dns.RR{r.Answer, r.Ns} {
		rrsets, sigs := map[set][]dns.RR{}, map[set][]*dns.RRSIG{}
		for _, rr := range section {
			k := set{strings.ToLower(rr.Header().Name), rr.Header().Rrtype}
			if s, ok := rr.(*dns.RRSIG); ok {
				k.t = s.TypeCovered
				sigs[k] = append(sigs[k], s)
				continue
			}
			if n, ok := rr.(*dns.NSEC); ok {
				nsecs = append(nsecs, n)
			}
			rrsets[k] = append(rrsets[k], rr)
		}
		for k, rrs := range rrsets {
			if k.t == dns.TypeNS && !r.Authoritative {
				continue
			}
			if len(sigs[k]) == 0 {
				t.Errorf("%s %s is not signed", k.name, dns.TypeToString[k.t])
			}
			for _, s := range sigs[k] {
				var key *dns.DNSKEY
				for _, rr := range keys {
					if d := rr.(*dns.DNSKEY); d.KeyTag() == s.KeyTag {
						key = d
					}
				}
				if key == nil {
					t.Errorf("%s %s is signed by key %d, not in the DNSKEY RRset", k.name, dns.TypeToString[k.t], s.KeyTag)
				} else if err := s.Verify(key, rrs); err != nil || !s.ValidityPeriod(time.Now()) {
					t.Errorf("%s %s: the signature by %d does not verify: %v", k.name, dns.TypeToString[k.t], s.KeyTag, err)
				}
			}
		}
	}
	return nsecs
}

// covers reports whether nsec proves that name does not exist: it lies strictly between the
// owner and the next name.
func covers(nsec *dns.NSEC, name string) bool {
	owner, _ := dnssec.CanonicalKey(nsec.Hdr.Name)
	next, _ := dnssec.CanonicalKey(nsec.NextDomain)
	n, _ := dnssec.CanonicalKey(name)
	return string(owner) < string(n) && (string(n) < string(next) || string(next) <= string(owner))
}

// TestSignedResponses asks a signed zone for every kind of answer with the DO bit: each RRset
// is signed by a key of the zone's DNSKEY RRset; a name that does not exist and a type a name
// has not are denied by one NSEC record owned by the name (compact denial), with NXNAME for
// the former; a wildcard's answer carries the NSEC record proving that the name itself does
// not exist; a referral carries its DS, or the NSEC record proving it has none.
func TestSignedResponses(t *testing.T) {
	signer := signerOf(t, testSigning)
	snap, hs := signedSnapshot(t, zoneYAML+`
static:
  "@": ["MX 10 mail", "TXT \"hello\""]
  mail: ["A 192.0.2.25"]
  secure: ["NS ns.secure", "DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"]
  ns.secure: ["A 192.0.2.53"]
  insecure: ["NS ns.elsewhere.net."]
`, signer)
	keys := signer.DNSKEY(time.Now())
	hs.set(t, snap, "checked.example.org.", "10.3.0.1", health.Down) // the failover variant
	hs.set(t, snap, "checked.example.org.", "10.3.0.2", health.Up)
	for _, tt := range []struct {
		name  string
		qtype uint16
		co    bool
		tcp   bool
		rcode int
		// answer is the number of records of the answer that are not signatures; nsec the
		// owner of the NSEC record expected with it ("" for none), nxname whether it denies
		// the name, covering a name its other NSEC record must cover ("" for none).
		answer   int
		nsec     string
		nxname   bool
		covering string
	}{
		{name: "www.example.org.", qtype: dns.TypeA, answer: 1},
		{name: "www.example.org.", qtype: dns.TypeAAAA, answer: 1},
		{name: "hashed.example.org.", qtype: dns.TypeA, answer: 1},
		{name: "checked.example.org.", qtype: dns.TypeA, answer: 1},
		{name: "big.example.org.", qtype: dns.TypeA, tcp: true, answer: 100},
		{name: "cdn.example.org.", qtype: dns.TypeA, answer: 1},
		{name: "cdn.example.org.", qtype: dns.TypeSRV, answer: 1},
		{name: "big.example.org.", qtype: dns.TypeHTTPS, answer: 1},
		{name: "v4only.example.org.", qtype: dns.TypeAAAA, nsec: "v4only.example.org."},
		{name: "www.example.org.", qtype: dns.TypeMX, nsec: "www.example.org."},
		{name: "missing.example.org.", qtype: dns.TypeA, nsec: "missing.example.org.", nxname: true},
		{name: "missing.example.org.", qtype: dns.TypeA, co: true, rcode: dns.RcodeNameError, nsec: "missing.example.org.", nxname: true},
		{name: "x.app.example.org.", qtype: dns.TypeA, answer: 1, covering: "x.app.example.org."},
		{name: "a.b.app.example.org.", qtype: dns.TypeA, answer: 1, covering: "a.b.app.example.org."},
		{name: "x.app.example.org.", qtype: dns.TypeTXT, nsec: "*.app.example.org.", covering: "x.app.example.org."},
		{name: "exact.app.example.org.", qtype: dns.TypeA, answer: 1},
		{name: "y.exact.app.example.org.", qtype: dns.TypeA, nsec: "y.exact.app.example.org.", nxname: true},
		{name: "ent.example.org.", qtype: dns.TypeA, nsec: "ent.example.org."},
		{name: "example.org.", qtype: dns.TypeSOA, answer: 1},
		{name: "example.org.", qtype: dns.TypeNS, answer: 2},
		{name: "example.org.", qtype: dns.TypeMX, answer: 1},
		{name: "example.org.", qtype: dns.TypeDNSKEY, answer: 2},
		{name: "example.org.", qtype: dns.TypeCDS, answer: 1},
		{name: "example.org.", qtype: dns.TypeCDNSKEY, answer: 1},
		{name: "example.org.", qtype: dns.TypeA, nsec: "example.org."},
		{name: "mail.example.org.", qtype: dns.TypeA, answer: 1},
		{name: "secure.example.org.", qtype: dns.TypeDS, answer: 1},
		{name: "insecure.example.org.", qtype: dns.TypeDS, nsec: "insecure.example.org."},
		{name: "host.secure.example.org.", qtype: dns.TypeA},
		{name: "host.insecure.example.org.", qtype: dns.TypeA, nsec: "insecure.example.org."},
		{name: "closed.example.org.", qtype: dns.TypeA, rcode: dns.RcodeRefused},
		{name: "specific.example.org.", qtype: dns.TypeA, answer: 1},
		{name: "specificcname.example.org.", qtype: dns.TypeA, answer: 1},
	} {
		t.Run(fmt.Sprintf("%s %s co=%v", tt.name, dns.TypeToString[tt.qtype], tt.co), func(t *testing.T) {
			r, _ := askDOOver(snap, tt.name, tt.qtype, tt.co, tt.tcp)
			if r.Rcode != tt.rcode {
				t.Fatalf("rcode %s, want %s\n%v", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.rcode], r)
			}
			n := 0
			for _, rr := range r.Answer {
				if rr.Header().Rrtype != dns.TypeRRSIG {
					n++
				}
			}
			if n != tt.answer {
				t.Errorf("%d records in the answer, want %d\n%v", n, tt.answer, r)
			}
			nsecs := verified(t, r, keys)
			if tt.nsec != "" {
				var own *dns.NSEC
				for _, x := range nsecs {
					if x.Hdr.Name == tt.nsec {
						own = x
					}
				}
				switch {
				case own == nil:
					t.Errorf("no NSEC record of %s\n%v", tt.nsec, r)
				case hasType(own, tt.qtype):
					t.Errorf("the NSEC record of %s has the type asked for: %v", tt.nsec, own)
				case hasType(own, dnssec.TypeNXNAME) != tt.nxname:
					t.Errorf("NXNAME in the NSEC record of %s: %v, want %v", tt.nsec, own, tt.nxname)
				}
			}
			if tt.covering != "" {
				found := false
				for _, x := range nsecs {
					found = found || covers(x, tt.covering)
				}
				if !found {
					t.Errorf("no NSEC record covers %s\n%v", tt.covering, r)
				}
			}
			if co := r.IsEdns0().Hdr.Ttl&ednsCO != 0; co != tt.co {
				t.Errorf("the reply's CO flag is %v, want %v", co, tt.co)
			}
		})
	}
}

// TestUnsignedWithoutDO: without the DO bit a signed zone answers as an unsigned one does (no
// signature, NXDOMAIN for a name that does not exist), but its key RRsets are served.
func TestUnsignedWithoutDO(t *testing.T) {
	snap, _ := signedSnapshot(t, zoneYAML, signerOf(t, testSigning))
	for _, tt := range []struct {
		name  string
		qtype uint16
		rcode int
		n     int
	}{
		{"www.example.org.", dns.TypeA, dns.RcodeSuccess, 1},
		{"missing.example.org.", dns.TypeA, dns.RcodeNameError, 0},
		{"v4only.example.org.", dns.TypeAAAA, dns.RcodeSuccess, 0},
		{"example.org.", dns.TypeDNSKEY, dns.RcodeSuccess, 2},
	} {
		r, _ := ask(snap, Options{}, tt.name, tt.qtype)
		if r.Rcode != tt.rcode || len(r.Answer) != tt.n {
			t.Errorf("%s %s: %s with %d records, want %s with %d", tt.name, dns.TypeToString[tt.qtype], dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[tt.rcode], tt.n)
		}
		for _, rr := range append(r.Answer, r.Ns...) {
			if rr.Header().Rrtype == dns.TypeRRSIG || rr.Header().Rrtype == dns.TypeNSEC {
				t.Errorf("%s %s without DO: %v", tt.name, dns.TypeToString[tt.qtype], rr)
			}
		}
	}
}

// roundRobinZone is a zone of one round robin of three checked backends.
const roundRobinZone = `
records:
  rr.example.org.:
    mode: roundrobin
    backends:
      - {address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.3, healthchecks: [{type: tcp, params: {port: 80}}]}
`

// TestPreparedSignaturesServed: an address answer's signature is the one its view prepared
// (for every variant of a roundrobin record, and after a health change), not one made for the
// query; a NODATA answer's NSEC is the view's.
func TestPreparedSignaturesServed(t *testing.T) {
	snap, hs := signedSnapshot(t, roundRobinZone, signerOf(t, testSigning))
	for _, a := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
		hs.set(t, snap, "rr.example.org.", a, health.Up)
	}
	rec := snap.Records()[0]
	prepared := func(r *dns.Msg) bool {
		sv := rec.View().Extra().Signed
		var addrs []netip.Addr
		var sig *dns.RRSIG
		for _, rr := range r.Answer {
			switch x := rr.(type) {
			case *dns.A:
				addrs = append(addrs, netip.AddrFrom4([4]byte(x.A.To4())))
			case *dns.RRSIG:
				sig = x
			}
		}
		s := sv.Set(catalog.IPv4, catalog.AnswerKey(addrs, ""))
		return s != nil && sig != nil && s.RRSIGs[0].(*dns.RRSIG).Signature == sig.Signature
	}
	for i := range 3 {
		if r, _ := askDO(snap, "rr.example.org.", dns.TypeA, false); !prepared(r) {
			t.Errorf("query %d: the signature is not the view's\n%v", i, r)
		}
	}
	hs.set(t, snap, "rr.example.org.", "10.0.0.2", health.Down)
	for i := range 3 {
		if r, _ := askDO(snap, "rr.example.org.", dns.TypeA, false); !prepared(r) {
			t.Errorf("after a backend went down, query %d: the signature is not the view's\n%v", i, r)
		}
	}
	if n := len(rec.View().Extra().Signed.Sets[catalog.IPv4]); n != 2 {
		t.Errorf("%d prepared IPv4 answers with two backends up, want 2", n)
	}
	r, _ := askDO(snap, "rr.example.org.", dns.TypeAAAA, false)
	nsec := rec.View().Extra().Signed.NSEC
	if len(r.Ns) < 4 || r.Ns[3].(*dns.RRSIG).Signature != nsec.RRSIGs[0].(*dns.RRSIG).Signature {
		t.Errorf("the NODATA answer's NSEC signature is not the view's\n%v", r)
	}
}

// TestOnDemandRateRefuses: beyond sign_rate signatures a second made on demand (the proofs of
// names that do not exist), a DO query gets SERVFAIL rather than an unsigned answer; a name
// already signed is served from the cache.
func TestOnDemandRateRefuses(t *testing.T) {
	opts := testSigning
	opts.SignRate = 1
	snap, _ := signedSnapshot(t, zoneYAML, signerOf(t, opts))
	if r, _ := askDO(snap, "one.example.org.", dns.TypeA, false); r.Rcode != dns.RcodeSuccess {
		t.Fatalf("the first proof: %s", dns.RcodeToString[r.Rcode])
	}
	if r, _ := askDO(snap, "two.example.org.", dns.TypeA, false); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("the second proof within a second at sign_rate 1: %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if r, _ := askDO(snap, "one.example.org.", dns.TypeA, false); r.Rcode != dns.RcodeSuccess {
		t.Errorf("the first name again, from the cache: %s", dns.RcodeToString[r.Rcode])
	}
}

// TestFastPathLeavesDOToSlowPath: when a plugin before gslb signs (CoreDNS's dnssec), the fast
// path answers the queries without the DO bit, over UDP and TCP, and leaves those with it, and
// DNSKEY queries (which the plugin answers), to the slow path. TestAppendFastEveryKindSigned
// holds it to the same in a zone Meridian's signer signs.
func TestFastPathLeavesDOToSlowPath(t *testing.T) {
	plain, _ := testSnapshot(t)
	for _, tt := range []struct {
		what string
		c    fastCase
		opts Options
		fast bool
	}{
		{"plugin signs, DO", fastCase{qname: "www.example.org.", qtype: dns.TypeA, edns: 1232, do: true}, Options{PluginSigns: true}, false},
		{"plugin signs, DO over TCP", fastCase{qname: "www.example.org.", qtype: dns.TypeA, edns: 1232, do: true, tcp: true}, Options{PluginSigns: true}, false},
		{"plugin signs, DNSKEY without DO", fastCase{qname: "example.org.", qtype: dns.TypeDNSKEY}, Options{PluginSigns: true}, false},
		{"plugin signs, no DO", fastCase{qname: "www.example.org.", qtype: dns.TypeA, edns: 1232}, Options{PluginSigns: true}, true},
		{"plugin signs, no DO over TCP", fastCase{qname: "www.example.org.", qtype: dns.TypeA, tcp: true}, Options{PluginSigns: true}, true},
		{"unsigned, DO", fastCase{qname: "www.example.org.", qtype: dns.TypeA, edns: 1232, do: true}, Options{}, true},
		{"unsigned, DNSKEY", fastCase{qname: "example.org.", qtype: dns.TypeDNSKEY}, Options{}, true},
	} {
		if _, ok := AppendFast(nil, plain, &tt.opts, tt.c.packet(t), testClient, tt.c.tcp, nil, time.Time{}); ok != tt.fast {
			t.Errorf("%s: answered by the fast path: %v, want %v", tt.what, ok, tt.fast)
		}
	}
}

// TestSignedPublishedNames: the names a site publishes for its peers are signed too, the
// localtargets and localrtt answers with the signatures their record's view prepared.
func TestSignedPublishedNames(t *testing.T) {
	signer := signerOf(t, testSigning)
	z, hs := publishingZone(t)
	snap := withHeartbeat(signedBuild(t, z, hs, signer))
	keys := signer.DNSKEY(time.Now())
	for _, tt := range []struct {
		name     string
		qtype    uint16
		prepared bool
	}{
		{"localtargets-app.example.org.", dns.TypeA, true},
		{"localtargets-app.example.org.", dns.TypeAAAA, true},
		{"localrtt-fast.example.org.", dns.TypeTXT, true},
		{"heartbeat-us.example.org.", dns.TypeTXT, false},
		{"localtargets-app.example.org.", dns.TypeTXT, false},
		{"localtargets-nothing.example.org.", dns.TypeA, false},
	} {
		t.Run(tt.name+" "+dns.TypeToString[tt.qtype], func(t *testing.T) {
			r, _ := askDO(snap, tt.name, tt.qtype, false)
			if r.Rcode != dns.RcodeSuccess {
				t.Fatalf("rcode %s\n%v", dns.RcodeToString[r.Rcode], r)
			}
			verified(t, r, keys)
			if !tt.prepared {
				return
			}
			var rrset []dns.RR
			for _, rr := range r.Answer {
				if rr.Header().Rrtype != dns.TypeRRSIG {
					rrset = append(rrset, rr)
				}
			}
			b := builder{zone: snap.ZoneOf("example.org.")}
			if s := b.preparedPublished(tt.name, rrset); s == nil {
				t.Errorf("no prepared signatures of %v", r.Answer)
			}
		})
	}
}
