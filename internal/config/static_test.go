package config

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestStatic parses a zone's static: map: owners and data relative to the zone or absolute,
// the TTL optional (the SOA's by default), one string or a list, any type the file plugin
// serves.
func TestStatic(t *testing.T) {
	yml := `soa: {ttl: 600}
static:
  "example.org.": ["MX 10 mail ; the mail host", "TXT \"v=spf1 -all\"", "CAA 0 issue \"letsencrypt.org\"", "HTTPS 1 . alpn=h2"]
  mail: "300 A 192.0.2.25"
  "mail.example.org.": ["AAAA 2001:db8::25"]
  _sip._tcp: ["SRV 10 5 5060 sip.example.org."]
  _dmarc: ["TXT \"v=DMARC1; p=reject\""]
  sub: ["NS ns1.sub", "NS ns.other.net.", "DS 12345 13 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE6F0B7E8F8D1D1A2FE1F5A3B5"]
  ns1.sub: ["A 192.0.2.53"]
  alias: ["CNAME www.example.net."]
  10.in-addr: ["PTR host.example.org."]
records:
  www.example.org.: {backends: [{address: 192.0.2.10}]}
  example.org.: {backends: [{address: 192.0.2.1}]}
`
	z, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range z.Static {
		got = append(got, s.RR.String())
	}
	want := []string{
		"example.org.\t600\tIN\tMX\t10 mail.example.org.",
		"example.org.\t600\tIN\tTXT\t\"v=spf1 -all\"",
		"example.org.\t600\tIN\tCAA\t0 issue \"letsencrypt.org\"",
		"example.org.\t600\tIN\tHTTPS\t1 . alpn=\"h2\"",
		"mail.example.org.\t300\tIN\tA\t192.0.2.25",
		"mail.example.org.\t600\tIN\tAAAA\t2001:db8::25",
		"_sip._tcp.example.org.\t600\tIN\tSRV\t10 5 5060 sip.example.org.",
		"_dmarc.example.org.\t600\tIN\tTXT\t\"v=DMARC1; p=reject\"",
		"sub.example.org.\t600\tIN\tNS\tns1.sub.example.org.",
		"sub.example.org.\t600\tIN\tNS\tns.other.net.",
		"sub.example.org.\t600\tIN\tDS\t12345 13 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE6F0B7E8F8D1D1A2FE1F5A3B5",
		"ns1.sub.example.org.\t600\tIN\tA\t192.0.2.53",
		"alias.example.org.\t600\tIN\tCNAME\twww.example.net.",
		"10.in-addr.example.org.\t600\tIN\tPTR\thost.example.org.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("static\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if z.Static[4].Pos.Line != 4 {
		t.Errorf("the position of mail's A: %+v", z.Static[4].Pos)
	}
}

// TestStaticErrors names the file, line and field of every mistake in static:.
func TestStaticErrors(t *testing.T) {
	tests := []struct {
		name, static, records, want string
	}{
		{"not a record", `www2: ["A not-an-address"]`, "", `zone.yml:3:10: static["www2"][0]: "A not-an-address" is not a record in presentation form ([TTL] TYPE DATA): bad A A: "not-an-address"` + "\n"},
		{"outside the zone", `"www.example.com.": ["A 192.0.2.1"]`, "", `static["www.example.com."]: www.example.com. is outside zone example.org.`},
		{"wildcard owner", `"*.example.org.": ["TXT x"]`, "", `invalid owner name`},
		{"two records in one", `a: ["A 192.0.2.1 A 192.0.2.2"]`, "", `is not a record`},
		{"a directive", `a: ["$TTL 5"]`, "", `is not a record`},
		{"two lines", `a: ["A 192.0.2.1\nA 192.0.2.2"]`, "", `one record per entry, on one line`},
		{"class CH", `a: ["CH TXT x"]`, "", `only class IN is served`},
		{"SOA", `"example.org.": ["SOA ns hostmaster 1 2 3 4 5"]`, "", `the zone's SOA comes from its soa: settings`},
		{"RRSIG", `a: ["RRSIG A 13 3 300 20300101000000 20200101000000 12345 example.org. AAAA"]`, "", `Meridian does not sign zones`},
		{"duplicate", `a: ["A 192.0.2.1", "a 192.0.2.1"]`, "", `zone.yml:3:22: static["a.example.org."]: duplicate A record (first at line 3)`},
		{"two TTLs", `a: ["60 A 192.0.2.1", "120 A 192.0.2.2"]`, "", `TTL 120 differs from 60 of the same A RRset`},
		{"CNAME and other data", `a: ["CNAME b", "TXT x"]`, "", `a CNAME excludes other data at a.example.org.`},
		{"two CNAMEs", `a: ["CNAME b", "CNAME c"]`, "", `a name has at most one CNAME`},
		{"CNAME at the apex", `"example.org.": ["CNAME b"]`, "", `a CNAME at the zone's apex`},
		{"CNAME at a record", `www: ["CNAME b"]`, gslbWWW, `a CNAME cannot share its name with the GSLB record www.example.org.`},
		{"A at a record", `www: ["A 192.0.2.9"]`, gslbWWW, `www.example.org. is a GSLB record, which answers A itself`},
		{"NS at the apex", `"example.org.": ["NS ns9"]`, "", `the apex's NS set comes from the zone's ns:`},
		{"DS without NS", `a: ["DS 1 13 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE6F0B7E8F8D1D1A2FE1F5A3B5"]`, "", `a DS record belongs at a delegation`},
		{"data at a cut", `sub: ["NS ns1.sub", "TXT x"]`, "", `sub.example.org. is delegated (it has NS records): only NS and DS belong at it`},
		{"data below a cut", "sub: [\"NS ns1.sub\"]\n  x.sub: [\"TXT x\"]", "", `x.sub.example.org. is below the delegation sub.example.org.: only glue`},
		{"record below a cut", `sub: ["NS ns1.sub"]`, "  app.sub.example.org.: {backends: [{address: 192.0.2.1}]}\n", `records["app.sub.example.org."]: the record app.sub.example.org. is at or below the delegation sub.example.org.`},
		{"not a string", `a: [{A: 1}]`, "", `static["a"][0]: must be a string`},
	}
	for _, tt := range tests {
		yml := "soa: {ttl: 600}\nstatic:\n  " + tt.static + "\nrecords:\n" + tt.records
		if tt.records == "" {
			yml += "  zz.example.org.: {backends: [{address: 192.0.2.200}]}\n"
		}
		_, err := ParseZone("zone.yml", []byte(yml), "example.org", nil, 1)
		if err == nil || !strings.Contains(err.Error()+"\n", tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

const gslbWWW = "  www.example.org.: {backends: [{address: 192.0.2.10}]}\n"

// FuzzStaticRR: no text crashes the static record parser, and what it accepts is a record of
// the owner, class IN, of a type it serves.
func FuzzStaticRR(f *testing.F) {
	for _, s := range []string{"MX 10 mail", "300 A 192.0.2.1", "TXT \"a\" \"b\"", "NS ns1", "HTTPS 1 . alpn=h2", "SOA a b 1 2 3 4 5", "(", "A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		rr, err := parseStaticRR("a.example.org.", text, "example.org.", 300)
		if err != nil {
			return
		}
		h := rr.Header()
		if h.Name != "a.example.org." || h.Class != dns.ClassINET || staticForbidden[h.Rrtype] != "" {
			t.Fatalf("%q parsed as %v", text, rr)
		}
	})
}
