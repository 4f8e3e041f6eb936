package catalog

import (
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// nsecOnly is a ViewSigner that signs each record's NSEC record only, with the types A.
type nsecOnly struct{}

func (nsecOnly) SignView(r *Record, v *View, prev *SignedView, now time.Time) *SignedView {
	name := r.Name()
	out := &SignedView{Epoch: r.Zone.Signer().Epoch(now)}
	var old *SignedRRset
	if prev != nil {
		old = &prev.NSEC
	}
	out.NSEC, _ = r.Zone.Reuse(old, []dns.RR{dnssec.NSEC(name, r.Zone.NSECNext(name), []uint16{dns.TypeA}, 60)}, now)
	out.Due = out.NSEC.Due
	return out
}

// testSigner returns a signer of example.org. with one key (a CSK) and opts.
func testSigner(t *testing.T, opts dnssec.Options) *dnssec.Signer {
	t.Helper()
	k, err := dnssec.ReadKey(testutil.WriteKey(t, t.TempDir(), testutil.KeySpec{Zone: "example.org", KSK: true}).Base)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := dnssec.NewKeyset([]*dnssec.Key{k})
	if err != nil {
		t.Fatal(err)
	}
	return dnssec.NewSigner("example.org.", ks, opts)
}

var signing = dnssec.Options{Validity: 14 * 24 * time.Hour, Refresh: 5 * 24 * time.Hour, InceptionOffset: time.Hour, KeyTTL: 60, CacheCapacity: 64}

// signedZoneYAML has a wildcard at app with a record and a deeper name beside it, and names
// elsewhere.
const signedZoneYAML = `
static:
  mail: ["A 192.0.2.25"]
  sub: ["NS ns.sub"]
  ns.sub: ["A 192.0.2.53"]
records:
  www.example.org.: {backends: [{address: 10.0.0.1}]}
  "*.app.example.org.": {backends: [{address: 10.0.0.2}]}
  api.app.example.org.: {backends: [{address: 10.0.0.3}]}
  x.deep.app.example.org.: {backends: [{address: 10.0.0.4}]}
`

// signed compiles yaml, the zone example.org., signed by s with nsecOnly, reusing prev's
// signatures.
func signed(t *testing.T, yaml string, s *dnssec.Signer, prev *Snapshot) *Snapshot {
	t.Helper()
	snap, err := BuildUnviewed([]*config.Zone{mustZone(t, "example.org", yaml)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Sign(map[string]*dnssec.Signer{"example.org.": s}, nsecOnly{}, prev, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Records() {
		r.Refresh()
	}
	snap.CarryDone()
	return snap
}

// TestWildcardChain: the names at and below a wildcard's parent are an NSEC chain in canonical
// order, ending at the name right after the parent's subtree; a name the wildcard answers for
// is covered by the chain's name before it; the other names' NSEC records are compact.
func TestWildcardChain(t *testing.T) {
	snap := signed(t, signedZoneYAML, testSigner(t, signing), nil)
	z := snap.ZoneOf("example.org.")
	for _, tt := range []struct{ name, next string }{
		{"app.example.org.", "*.app.example.org."},
		{"*.app.example.org.", "api.app.example.org."},
		{"api.app.example.org.", "deep.app.example.org."},
		{"deep.app.example.org.", "x.deep.app.example.org."},
		{"x.deep.app.example.org.", "app\\000.example.org."},
		{"www.example.org.", "\\000.www.example.org."},
		{"mail.example.org.", "\\000.mail.example.org."},
		{"example.org.", "\\000.example.org."},
	} {
		if got := z.NSECNext(tt.name); got != tt.next {
			t.Errorf("NSECNext(%s) = %s, want %s", tt.name, got, tt.next)
		}
		s := z.NSECOf(tt.name)
		if s == nil || s.Signed == nil || s.RRs[0].(*dns.NSEC).NextDomain != tt.next {
			t.Errorf("the signed NSEC record of %s: %+v", tt.name, s)
		}
	}
	for _, tt := range []struct{ qname, owner string }{
		{"foo.app.example.org.", "x.deep.app.example.org."},
		{"b.app.example.org.", "api.app.example.org."},
		{"a.b.app.example.org.", "api.app.example.org."},
		{"0.app.example.org.", "*.app.example.org."},
		{"zzz.app.example.org.", "x.deep.app.example.org."},
	} {
		if got, ok := z.Covering(tt.qname); !ok || got != tt.owner {
			t.Errorf("Covering(%s) = %s, %v; want %s", tt.qname, got, ok, tt.owner)
		}
	}
	if _, ok := z.Covering("foo.example.org."); ok {
		t.Error("a name outside every wildcard's chain is covered")
	}
	if s := z.NSECOf("ns.sub.example.org."); s != nil {
		t.Errorf("glue below a cut has an NSEC record: %v", s.RRs)
	}
	sub := z.NSECOf("sub.example.org.")
	if sub == nil || !slices.Equal(sub.RRs[0].(*dns.NSEC).TypeBitMap, []uint16{dns.TypeNS, dns.TypeRRSIG, dns.TypeNSEC}) {
		t.Errorf("the cut's NSEC record: %+v", sub)
	}
	apex := z.NSECOf("example.org.").RRs[0].(*dns.NSEC).TypeBitMap
	if want := []uint16{dns.TypeNS, dns.TypeSOA, dns.TypeRRSIG, dns.TypeNSEC, dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY}; !slices.Equal(apex, want) {
		t.Errorf("the apex's types %v, want %v", apex, want)
	}
}

// TestSignaturesReused: a reload of the same zones reuses every signature of the snapshot
// served; a changed record and a changed serial get new ones; a pass signs again only what is
// due, and everything when a key changes state.
func TestSignaturesReused(t *testing.T) {
	s := testSigner(t, signing)
	first := signed(t, signedZoneYAML, s, nil)
	z1 := first.ZoneOf("example.org.")
	again := signed(t, signedZoneYAML, s, first)
	z2 := again.ZoneOf("example.org.")
	if z1.Signed().SOA.Signed != z2.Signed().SOA.Signed || z1.NSECOf("mail.example.org.").Signed != z2.NSECOf("mail.example.org.").Signed {
		t.Error("a reload of the same zone signs its own data again")
	}
	if z1.NSECOf("www.example.org.").Signed != z2.NSECOf("www.example.org.").Signed {
		t.Error("a reload of the same zone signs a record's NSEC again")
	}
	before := z2.Signed().SOA.Signed
	z2.SetSerial(z2.Serial() + 1)
	if after := z2.Signed(); after.SOA.Signed == before || after.Serial != z2.Serial() || after.SOA.RRs[0].(*dns.SOA).Serial != z2.Serial() {
		t.Error("a new serial does not sign the SOA again")
	}

	now := time.Now()
	www := z2.NSECOf("www.example.org.").Signed
	again.Resign(now) // nothing due
	if z2.NSECOf("www.example.org.").Signed != www {
		t.Error("a pass signed a signature that is not due")
	}
	again.Resign(www.Due.Add(time.Second))
	if z2.NSECOf("www.example.org.").Signed == www || z2.Signed().Due.Before(www.Due) {
		t.Error("a pass after the signatures are due does not sign them again")
	}
}

// TestResignFollowsKeyEvents: when a key's timing metadata changes its state, the next pass
// signs everything again with the keys active then.
func TestResignFollowsKeyEvents(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second)
	var keys []*dnssec.Key
	for _, spec := range []testutil.KeySpec{
		{Zone: "example.org", KSK: true, Inactive: now.Add(time.Hour)},
		{Zone: "example.org", KSK: true, Publish: now, Activate: now.Add(time.Hour)},
	} {
		k, err := dnssec.ReadKey(testutil.WriteKey(t, dir, spec).Base)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	ks, _ := dnssec.NewKeyset(keys)
	snap := signed(t, signedZoneYAML, dnssec.NewSigner("example.org.", ks, signing), nil)
	z := snap.ZoneOf("example.org.")
	tag := func(s *SignedRRset) uint16 { return s.RRSIGs[0].(*dns.RRSIG).KeyTag }
	if tag(z.NSECOf("www.example.org.")) != keys[0].Tag || tag(&z.Signed().SOA) != keys[0].Tag {
		t.Fatal("not signed by the active key")
	}
	snap.Resign(now.Add(time.Hour))
	if tag(z.NSECOf("www.example.org.")) != keys[1].Tag || tag(&z.Signed().SOA) != keys[1].Tag || tag(&z.Signed().DNSKEY) != keys[1].Tag {
		t.Error("after the rollover, a pass does not sign with the new key")
	}
}

// TestSignedWire: every prepared signature is packed with its RRset as the fast path copies
// it: the RRSIGs in wire form (their owner in full, uncompressed), and the records too for the
// SOA and NSEC RRsets; a reuse keeps them, a new serial packs the new SOA and signatures.
func TestSignedWire(t *testing.T) {
	s := testSigner(t, signing)
	first := signed(t, signedZoneYAML, s, nil)
	z := first.ZoneOf("example.org.")
	sz := z.Signed()
	check := func(name string, rs *SignedRRset, records bool) {
		t.Helper()
		if !rs.Ready() {
			t.Fatalf("%s: not ready", name)
		}
		if got := unpackRRs(t, rs.SigWire); !slices.EqualFunc(got, rs.RRSIGs, func(a, b dns.RR) bool { return a.String() == b.String() }) {
			t.Errorf("%s: signatures' wire %v, want %v", name, got, rs.RRSIGs)
		}
		want := []dns.RR(nil)
		if records {
			want = rs.RRs
		}
		if got := unpackRRs(t, rs.Wire); !slices.EqualFunc(got, want, func(a, b dns.RR) bool { return a.String() == b.String() }) {
			t.Errorf("%s: records' wire %v, want %v", name, got, want)
		}
	}
	check("SOA", &sz.SOA, true)
	check("negative SOA", &sz.NegativeSOA, true)
	check("NS", &sz.NS, false)
	check("mail A", sz.Static[NameType{"mail.example.org.", dns.TypeA}], false)
	check("mail NSEC", z.NSECOf("mail.example.org."), true)
	check("www NSEC", z.NSECOf("www.example.org."), true)

	again := signed(t, signedZoneYAML, s, first)
	if w := again.ZoneOf("example.org.").Signed().SOA.SigWire.Wire; &w[0] != &sz.SOA.SigWire.Wire[0] {
		t.Error("reused signatures packed again")
	}
	z.SetSerial(z.Serial() + 1)
	check("SOA, new serial", &z.Signed().SOA, true)
	if soa := unpackRRs(t, z.Signed().SOA.Wire)[0].(*dns.SOA); soa.Serial != z.Serial() {
		t.Errorf("SOA wire of serial %d, want %d", soa.Serial, z.Serial())
	}
	if (&SignedRRset{}).Ready() || (*SignedRRset)(nil).Ready() {
		t.Error("an RRset without signatures is ready")
	}
}

// unpackRRs unpacks the records of s (with their owners).
func unpackRRs(t *testing.T, s Section) []dns.RR {
	t.Helper()
	var out []dns.RR
	for off := 0; off < len(s.Wire); {
		rr, next, err := dns.UnpackRR(s.Wire, off)
		if err != nil {
			t.Fatalf("unpacking %x at %d: %v", s.Wire, off, err)
		}
		out, off = append(out, rr), next
	}
	if len(out) != s.Count {
		t.Fatalf("%d records, Count %d", len(out), s.Count)
	}
	return out
}
