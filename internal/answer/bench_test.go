package answer

import (
	"testing"

	"github.com/miekg/dns"
)

// BenchmarkRespond measures the query path per mode and answer kind. The allocations it reports
// are the response's own: the message, its sections and their records.
func BenchmarkRespond(b *testing.B) {
	snap, _ := testSnapshot(b)
	cases := []struct {
		name  string
		qname string
		qtype uint16
		ecs   bool
	}{
		{"failover/A", "www.example.org.", dns.TypeA, false},
		{"failover/AAAA", "www.example.org.", dns.TypeAAAA, false},
		{"ip-hash/A+ECS", "hashed.example.org.", dns.TypeA, true},
		{"wildcard/A", "x.app.example.org.", dns.TypeA, false},
		{"fail-open/A", "checked.example.org.", dns.TypeA, false},
		{"NODATA/MX", "www.example.org.", dns.TypeMX, false},
		{"NXDOMAIN", "missing.example.org.", dns.TypeA, false},
	}
	for _, c := range cases {
		q := new(dns.Msg)
		q.SetQuestion(c.qname, c.qtype)
		opts := Options{}
		if c.ecs {
			q = ecsQuery(c.qname, c.qtype, subnet(1, 24, "198.51.100.0"))
			opts.UseECS = true
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m, _ := Respond(snap, opts, Query{Msg: q, Source: testClient}); m == nil {
					b.Fatal("no response")
				}
			}
		})
	}
}

// FuzzRespond feeds arbitrary wire-format queries to Respond: whatever unpacks must get a
// response that packs, or be passed on, and never a panic.
func FuzzRespond(f *testing.F) {
	snap, _ := testSnapshot(f)
	for _, seed := range []struct {
		name  string
		qtype uint16
	}{
		{"www.example.org.", dns.TypeA}, {"hashed.example.org.", dns.TypeAAAA},
		{"a.b.app.example.org.", dns.TypeANY}, {"big.example.org.", dns.TypeHTTPS},
		{"cdn.example.org.", dns.TypeSRV}, {"example.org.", dns.TypeNS},
	} {
		m := ecsQuery(seed.name, seed.qtype, subnet(1, 24, "198.51.100.0"))
		wire, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(wire, false, true)
	}
	f.Fuzz(func(t *testing.T, wire []byte, tcp, useECS bool) {
		req := new(dns.Msg)
		if err := req.Unpack(wire); err != nil {
			return // the server answers FORMERR before the plugin sees it
		}
		m, res := Respond(snap, Options{UseECS: useECS, EnableTXT: true}, Query{Msg: req, Source: testClient, TCP: tcp})
		if res == NotOurs {
			return
		}
		packed, err := m.Pack()
		if err != nil {
			t.Fatalf("response does not pack: %v\n%v", err, m)
		}
		if !tcp && len(packed) > max(512, min(int(udpSize(req)), advertisedUDPSize)) {
			t.Fatalf("UDP response of %d bytes for a %d-byte buffer", len(packed), udpSize(req))
		}
	})
}

func udpSize(m *dns.Msg) uint16 {
	if o := m.IsEdns0(); o != nil {
		return o.UDPSize()
	}
	return 512
}
