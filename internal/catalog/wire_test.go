package catalog

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// wireZone has static RRsets of several types, a static CNAME, a delegation with static glue
// and a GSLB record among its name servers.
const wireZone = `soa: {mname: ns1.example.org., rname: hostmaster.example.org., ttl: 3600, minimum: 60, serial: 7}
ns: [ns1.example.org., ns2.example.org.]
static:
  "@": ["MX 10 mail", "TXT \"v=spf1 -all\""]
  mail: ["300 A 192.0.2.25", "300 A 192.0.2.26", "AAAA 2001:db8::25"]
  alias: ["CNAME www"]
  sub: ["NS ns1.sub", "NS gslb-ns"]
  ns1.sub: ["A 192.0.2.53"]
records:
  gslb-ns.example.org.: {backends: [{address: 192.0.2.60}]}
`

// packed returns rrs as a message's answer section packs them, uncompressed, each owner
// replaced by owner (nil: kept) — what a Section writes for a query of that name.
func packed(t *testing.T, rrs []dns.RR) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.Answer = rrs
	wire, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return wire[12:]
}

// withOwner writes s as a response to a query of name (lower case) carries it.
func withOwner(t *testing.T, s Section, name string) []byte {
	t.Helper()
	if !s.AtQuery {
		return s.Wire
	}
	owner := make([]byte, 256)
	n, err := dns.PackDomainName(name, owner, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for w := s.Wire; len(w) > 0; {
		l := 10 + (int(w[8])<<8 | int(w[9]))
		out = append(append(out, owner[:n]...), w[:l]...)
		w = w[l:]
	}
	return out
}

// TestStaticWire: a name's static RRset of each type, and its CNAME, is in wire form the
// records a message packs, their owners the query's; a type the name has none of is absent.
func TestStaticWire(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", wireZone)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	z := snap.ZoneOf("example.org.")
	for _, tt := range []struct {
		name  string
		qtype uint16
		want  bool
	}{
		{"mail.example.org.", dns.TypeA, true},
		{"mail.example.org.", dns.TypeAAAA, true},
		{"mail.example.org.", dns.TypeTXT, false},
		{"example.org.", dns.TypeMX, true},
		{"example.org.", dns.TypeTXT, true},
		{"alias.example.org.", dns.TypeCNAME, true},
		{"alias.example.org.", dns.TypeA, false},
		{"sub.example.org.", dns.TypeNS, true},
		{"gslb-ns.example.org.", dns.TypeA, false},
	} {
		found := z.Find(tt.name)
		s, ok := found.Wire.RRset(tt.qtype)
		if ok != tt.want {
			t.Errorf("%s %s: found %v, want %v", tt.name, dns.TypeToString[tt.qtype], ok, tt.want)
			continue
		}
		if !ok {
			continue
		}
		want := packed(t, found.Static[tt.qtype])
		if got := withOwner(t, s, tt.name); !bytes.Equal(got, want) || s.Count != len(found.Static[tt.qtype]) || s.Len(len(tt.name)+1) != len(want) {
			t.Errorf("%s %s: % x (%d records), want % x (%d)", tt.name, dns.TypeToString[tt.qtype], got, s.Count, want, len(found.Static[tt.qtype]))
		}
	}
}

// TestZoneWire: the zone's SOA, NS and negative SOA are the records a message packs, with the
// current serial, packed again when the serial changes; a clone (WhatIf) shares them.
func TestZoneWire(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", wireZone)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	z := snap.ZoneOf("example.org.")
	check := func(serial uint32) {
		t.Helper()
		w := z.Wire()
		ns := []dns.RR{z.NS[0], z.NS[1]}
		for _, tt := range []struct {
			what string
			got  Section
			want []dns.RR
		}{
			{"SOA", w.SOA, []dns.RR{z.SOARecord()}},
			{"negative SOA", w.Negative, []dns.RR{z.NegativeSOARecord()}},
			{"NS", w.NS, ns},
		} {
			if want := packed(t, tt.want); !bytes.Equal(tt.got.Wire, want) || tt.got.AtQuery || tt.got.Count != len(tt.want) {
				t.Errorf("serial %d, %s: % x, want % x", serial, tt.what, tt.got.Wire, want)
			}
		}
		if got := z.SOARecord().Serial; got != serial {
			t.Fatalf("serial %d, want %d", got, serial)
		}
	}
	check(7)
	z.SetSerial(8)
	check(8)
	if c := z.clone(); c.Wire() != z.Wire() {
		t.Error("a clone packs its templates again")
	}
}

// TestReferralWire: a delegation's referral holds its NS RRset and static glue as a message
// packs them, and the names of the GSLB records among its name servers.
func TestReferralWire(t *testing.T) {
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", wireZone)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	d := snap.ZoneOf("example.org.").Find("x.sub.example.org.").Cut
	if d == nil || d.Wire == nil {
		t.Fatal("no delegation, or no wire form")
	}
	if want := packed(t, d.NS); !bytes.Equal(d.Wire.NS.Wire, want) || d.Wire.NS.Count != 2 {
		t.Errorf("NS % x, want % x", d.Wire.NS.Wire, want)
	}
	if want := packed(t, d.Glue); !bytes.Equal(d.Wire.Glue.Wire, want) || d.Wire.Glue.Count != 1 {
		t.Errorf("glue % x, want % x", d.Wire.Glue.Wire, want)
	}
	if len(d.Wire.GlueOwners) != 1 || string(d.Wire.GlueOwners[0]) != "\x07gslb-ns\x07example\x03org\x00" {
		t.Errorf("glue owners %q", d.Wire.GlueOwners)
	}
}

// BenchmarkLiveHeapStatic parses 100,000 static names (each an A record, every tenth a TXT
// record too) and builds their catalog, and reports the live heap the catalog takes per name,
// wire templates included, after a collection. Run it once:
//
//	go test -run XXX -bench LiveHeapStatic -benchtime 1x ./internal/catalog
func BenchmarkLiveHeapStatic(b *testing.B) {
	const n = 100000
	var zone strings.Builder
	zone.WriteString("static:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&zone, "  n%06d: [\"A 192.0.2.%d\"", i, i%250+1)
		if i%10 == 0 {
			zone.WriteString(", \"TXT \\\"v=spf1 -all\\\"\"")
		}
		zone.WriteString("]\n")
	}
	data := []byte(zone.String())
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		z, err := config.ParseZone("zone.yml", data, "bench.test.", nil, 1)
		if err != nil {
			b.Fatal(err)
		}
		parsed := live()
		s, err := Build([]*config.Zone{z}, states{})
		if err != nil {
			b.Fatal(err)
		}
		built := live()
		b.ReportMetric(float64(built-parsed)/n, "catalog-B/name")
		runtime.KeepAlive(s)
		runtime.KeepAlive(z)
	}
	runtime.KeepAlive(data)
}
