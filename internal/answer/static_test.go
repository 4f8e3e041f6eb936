package answer

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/health"
)

// staticZone is a complete zone: GSLB records at the apex and at www (with a TXT of its own),
// static data at the apex and elsewhere, a delegation with in-zone glue, and a delegation to a
// sub-GSLB whose name servers are a GSLB record of the zone.
const staticZone = `
soa: {mname: ns1.example.org., rname: hostmaster.example.org., ttl: 3600, minimum: 60}
ns: [ns1.example.org.]
static:
  "@": ["MX 10 mail", "TXT \"v=spf1 -all\"", "CAA 0 issue \"letsencrypt.org\""]
  mail: ["300 A 192.0.2.25", "AAAA 2001:db8::25"]
  www: ["TXT \"site-verification=abc\"", "HTTPS 1 . alpn=h2"]
  alias: ["CNAME www"]
  _sip._tcp: ["SRV 10 5 5060 sip.example.org."]
  sub: ["NS ns1.sub", "NS ns.other.net.", "DS 12345 13 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE6F0B7E8F8D1D1A2FE1F5A3B5"]
  ns1.sub: ["A 192.0.2.53"]
  geo: ["NS gslb-ns.example.org."]
records:
  example.org.: {backends: [{address: 192.0.2.1}]}
  www.example.org.: {backends: [{address: 192.0.2.10}, {address: "2001:db8::10"}]}
  gslb-ns.example.org.:
    backends:
      - {address: 192.0.2.60, healthchecks: [{type: tcp, params: {port: 53}}]}
      - {address: 192.0.2.61, healthchecks: [{type: tcp, params: {port: 53}}]}
`

// TestCompleteZone answers every kind of static data with AA and the right sections, lets
// the GSLB records keep A and AAAA (the apex's too), and answers queries at or below a
// delegation with a referral: not authoritative, NS in authority, glue in additional (the
// sub-GSLB's healthy name servers only), except DS at the cut.
func TestCompleteZone(t *testing.T) {
	snap, hs := snapshotOf(t, "example.org.yml", staticZone)
	hs.set(t, snap, "gslb-ns.example.org.", "192.0.2.60", health.Up)
	hs.set(t, snap, "gslb-ns.example.org.", "192.0.2.61", health.Down)
	tests := []struct {
		name     string
		qtype    uint16
		rcode    int
		aa       bool
		answer   []string
		ns       []string
		extra    []string
		ttlFirst uint32
	}{
		{"example.org.", dns.TypeA, dns.RcodeSuccess, true, []string{"A 192.0.2.1"}, nil, nil, 0},
		{"example.org.", dns.TypeMX, dns.RcodeSuccess, true, []string{"MX 10 mail.example.org."}, nil, nil, 3600},
		{"example.org.", dns.TypeTXT, dns.RcodeSuccess, true, []string{`TXT "v=spf1 -all"`}, nil, nil, 0},
		{"example.org.", dns.TypeCAA, dns.RcodeSuccess, true, []string{`CAA 0 issue "letsencrypt.org"`}, nil, nil, 0},
		{"example.org.", dns.TypeSOA, dns.RcodeSuccess, true, []string{"SOA ns1.example.org. hostmaster.example.org. 1 7200 3600 1209600 60"}, nil, nil, 0},
		{"example.org.", dns.TypeNS, dns.RcodeSuccess, true, []string{"NS ns1.example.org."}, nil, nil, 0},
		{"example.org.", dns.TypeSRV, dns.RcodeSuccess, true, nil, []string{"SOA ns1.example.org. hostmaster.example.org. 1 7200 3600 1209600 60"}, nil, 0},
		{"mail.example.org.", dns.TypeA, dns.RcodeSuccess, true, []string{"A 192.0.2.25"}, nil, nil, 300},
		{"MAIL.example.org.", dns.TypeAAAA, dns.RcodeSuccess, true, []string{"AAAA 2001:db8::25"}, nil, nil, 0},
		{"mail.example.org.", dns.TypeMX, dns.RcodeSuccess, true, nil, []string{"SOA ns1.example.org. hostmaster.example.org. 1 7200 3600 1209600 60"}, nil, 0},
		{"www.example.org.", dns.TypeA, dns.RcodeSuccess, true, []string{"A 192.0.2.10"}, nil, nil, 0},
		{"www.example.org.", dns.TypeTXT, dns.RcodeSuccess, true, []string{`TXT "site-verification=abc"`}, nil, nil, 0},
		{"www.example.org.", dns.TypeHTTPS, dns.RcodeSuccess, true, []string{`HTTPS 1 . alpn="h2"`}, nil, nil, 0},
		{"alias.example.org.", dns.TypeA, dns.RcodeSuccess, true, []string{"CNAME www.example.org."}, nil, nil, 0},
		{"alias.example.org.", dns.TypeCNAME, dns.RcodeSuccess, true, []string{"CNAME www.example.org."}, nil, nil, 0},
		{"_sip._tcp.example.org.", dns.TypeSRV, dns.RcodeSuccess, true, []string{"SRV 10 5 5060 sip.example.org."}, nil, nil, 0},
		{"_tcp.example.org.", dns.TypeSRV, dns.RcodeSuccess, true, nil, []string{"SOA ns1.example.org. hostmaster.example.org. 1 7200 3600 1209600 60"}, nil, 0}, // an empty non-terminal
		{"nothing.example.org.", dns.TypeA, dns.RcodeNameError, true, nil, []string{"SOA ns1.example.org. hostmaster.example.org. 1 7200 3600 1209600 60"}, nil, 0},
		{"sub.example.org.", dns.TypeA, dns.RcodeSuccess, false, nil, []string{"NS ns1.sub.example.org.", "NS ns.other.net."}, []string{"A 192.0.2.53"}, 0},
		{"host.deep.sub.example.org.", dns.TypeAAAA, dns.RcodeSuccess, false, nil, []string{"NS ns1.sub.example.org.", "NS ns.other.net."}, []string{"A 192.0.2.53"}, 0},
		{"ns1.sub.example.org.", dns.TypeA, dns.RcodeSuccess, false, nil, []string{"NS ns1.sub.example.org.", "NS ns.other.net."}, []string{"A 192.0.2.53"}, 0},
		{"sub.example.org.", dns.TypeNS, dns.RcodeSuccess, false, nil, []string{"NS ns1.sub.example.org.", "NS ns.other.net."}, []string{"A 192.0.2.53"}, 0},
		{"sub.example.org.", dns.TypeDS, dns.RcodeSuccess, true, []string{"DS 12345 13 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE6F0B7E8F8D1D1A2FE1F5A3B5"}, nil, nil, 0},
		{"geo.example.org.", dns.TypeDS, dns.RcodeSuccess, true, nil, []string{"SOA ns1.example.org. hostmaster.example.org. 1 7200 3600 1209600 60"}, nil, 0},
		{"app.geo.example.org.", dns.TypeA, dns.RcodeSuccess, false, nil, []string{"NS gslb-ns.example.org."}, []string{"A 192.0.2.60"}, 0},
	}
	for _, tt := range tests {
		resp, _ := ask(snap, Options{}, tt.name, tt.qtype)
		name := tt.name + " " + dns.TypeToString[tt.qtype]
		if resp.Rcode != tt.rcode || resp.Authoritative != tt.aa {
			t.Errorf("%s: rcode %s, AA %v; want %s, %v", name, dns.RcodeToString[resp.Rcode], resp.Authoritative, dns.RcodeToString[tt.rcode], tt.aa)
		}
		if got := rdata(resp.Answer); !slices.Equal(got, tt.answer) {
			t.Errorf("%s: answer %v, want %v", name, got, tt.answer)
		}
		if got := rdata(resp.Ns); !slices.Equal(got, tt.ns) {
			t.Errorf("%s: authority %v, want %v", name, got, tt.ns)
		}
		if got := rdata(resp.Extra); !slices.Equal(got, tt.extra) {
			t.Errorf("%s: additional %v, want %v", name, got, tt.extra)
		}
		if tt.ttlFirst != 0 && (len(resp.Answer) == 0 || resp.Answer[0].Header().Ttl != tt.ttlFirst) {
			t.Errorf("%s: TTL of the first answer, want %d: %v", name, tt.ttlFirst, resp.Answer)
		}
		if len(resp.Answer) > 0 && !strings.EqualFold(resp.Answer[0].Header().Name, tt.name) {
			t.Errorf("%s: the answer's owner %s", name, resp.Answer[0].Header().Name)
		}
	}
}

// TestExplainCompleteZone: explain says when static data answers and when a name is delegated.
func TestExplainCompleteZone(t *testing.T) {
	snap, _ := snapshotOf(t, "example.org.yml", staticZone)
	for _, tt := range []struct {
		name  string
		qtype uint16
		want  string
	}{
		{"example.org.", dns.TypeMX, "answered from the zone's static records"},
		{"www.example.org.", dns.TypeTXT, "answered from the zone's static records"},
		{"host.sub.example.org.", dns.TypeA, "delegated: sub.example.org. has NS records, a referral"},
		{"www.example.org.", dns.TypeA, "www.example.org."},
	} {
		m := new(dns.Msg)
		m.SetQuestion(tt.name, tt.qtype)
		if got := Explain(snap, Options{}, Query{Msg: m}).String(); !strings.Contains(got, tt.want) {
			t.Errorf("explain %s %s does not say %q:\n%s", tt.name, dns.TypeToString[tt.qtype], tt.want, got)
		}
	}
}
