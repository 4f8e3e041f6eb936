package geo_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func TestLocationMapLookup(t *testing.T) {
	m, err := geo.ParseLocationMap("map.yml", []byte(`subnets:
  - subnet: 10.0.0.0/8
    location: ten
  - subnet: 10.1.0.0/16
    location: ten-one
  - subnet: 10.1.2.0/24
    location: ten-one-two
  - subnet: 10.1.2.3/32
    location: host
  - subnet: 0.0.0.0/0
    location: anywhere-v4
  - subnet: 2001:db8::/32
    location: doc
  - subnet: 2001:db8:1::/48
    location: doc-one
  - subnet: "2001:db8:1:2::1/128"
    location: v6-host
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr, subnet, location string
		bits                   int
	}{
		{"10.1.2.3", "10.1.2.3/32", "host", 32},
		{"10.1.2.4", "10.1.2.0/24", "ten-one-two", 30}, // 10.1.2.4/30 avoids the /32 beside it
		{"10.1.2.200", "10.1.2.0/24", "ten-one-two", 25},
		{"10.1.3.1", "10.1.0.0/16", "ten-one", 24},
		{"10.1.128.1", "10.1.0.0/16", "ten-one", 17},
		{"10.2.0.1", "10.0.0.0/8", "ten", 15}, // 10.2.0.0/15 holds no longer subnet
		{"10.200.0.1", "10.0.0.0/8", "ten", 9},
		{"11.0.0.1", "0.0.0.0/0", "anywhere-v4", 8},
		{"192.0.2.1", "0.0.0.0/0", "anywhere-v4", 1},
		{"::ffff:10.1.2.3", "10.1.2.3/32", "host", 128},
		{"::ffff:192.0.2.1", "0.0.0.0/0", "anywhere-v4", 97},
		{"2001:db8:1:2::1", "2001:db8:1:2::1/128", "v6-host", 128},
		{"2001:db8:1:3::1", "2001:db8:1::/48", "doc-one", 64},
		{"2001:db8:2::1", "2001:db8::/32", "doc", 47},
		{"2001:db8:8000::1", "2001:db8::/32", "doc", 33},
		{"2001:db9::1", "", "", 32},
		{"fe80::1", "", "", 1},
	}
	for _, tt := range tests {
		subnet, location, bits, found := m.Lookup(netip.MustParseAddr(tt.addr))
		if found != (tt.subnet != "") || found && subnet.String() != tt.subnet || location != tt.location || bits != tt.bits {
			t.Errorf("Lookup(%s) = %v %q /%d %v, want %s %q /%d", tt.addr, subnet, location, bits, found, tt.subnet, tt.location, tt.bits)
		}
	}
	if _, _, bits, found := m.Lookup(netip.Addr{}); found || bits != 0 {
		t.Errorf("Lookup(invalid) = /%d %v", bits, found)
	}
}

func TestLocationMapOneFamily(t *testing.T) {
	m, err := geo.ParseLocationMap("map.yml", []byte("subnets:\n  - {subnet: 192.0.2.0/24, location: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	// No IPv6 subnet: every IPv6 address answers alike.
	if _, _, bits, found := m.Lookup(netip.MustParseAddr("2001:db8::1")); found || bits != 0 {
		t.Errorf("IPv6 lookup = /%d %v, want /0 false", bits, found)
	}
	for _, empty := range []string{"subnets: []\n", "subnets:\n", "subnets: ~\n"} {
		m, err := geo.ParseLocationMap("map.yml", []byte(empty))
		if err != nil {
			t.Errorf("%q: %v", empty, err)
			continue
		}
		if _, _, bits, found := m.Lookup(netip.MustParseAddr("192.0.2.1")); found || bits != 0 {
			t.Errorf("%q: lookup = /%d %v", empty, bits, found)
		}
	}
}

func TestLocationMapAliases(t *testing.T) {
	m, err := geo.ParseLocationMap("map.yml", []byte(`subnets:
  - &first {subnet: 192.0.2.0/24, location: &loc shared}
  - {subnet: 198.51.100.0/24, location: *loc}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, loc, _, _ := m.Lookup(netip.MustParseAddr("198.51.100.1")); loc != "shared" {
		t.Errorf("location %q", loc)
	}
}

// TestLocationMapAliasBomb checks that aliases cannot make the parser do unbounded work: a
// mapping of many unknown keys, listed many times, would report every key for every listing.
func TestLocationMapAliasBomb(t *testing.T) {
	const keys, listings = 1500, 1500
	var b strings.Builder
	b.WriteString("bad: &bad {")
	for i := range keys {
		fmt.Fprintf(&b, "k%d: 0, ", i)
	}
	b.WriteString("}\nsubnets: [" + strings.Repeat("*bad, ", listings) + "]\n")
	start := time.Now()
	_, err := geo.ParseLocationMap("bomb.yml", []byte(b.String()))
	var list config.ErrorList
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "document too complex: YAML aliases expand to more than") {
		t.Fatalf("error = %.300v", err)
	}
	if len(list) > 2*keys {
		t.Errorf("%d errors: an aliased node reports its problems more than once", len(list))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestLocationMapErrors(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
	}{
		{"empty file", "", []string{`m.yml: the location map is empty; write "subnets: []" for a map without subnets`}},
		{"comment only", "# nothing\n", []string{`m.yml: the location map is empty`}},
		{"syntax", "subnets: [\n", []string{`m.yml:1: invalid YAML: did not find expected node content`}},
		{"two documents", "subnets: []\n---\nsubnets: []\n", []string{`m.yml:2:1: a location map holds one YAML document; found another`}},
		{"not a mapping", "- a\n", []string{`m.yml:1:1: a location map must be a mapping with the key "subnets", not a list`}},
		{"missing subnets", "{}\n", []string{`m.yml:1:1: the key "subnets" is missing`}},
		{"unknown top key", "subnet: []\n", []string{`m.yml:1:1: unknown key "subnet" (valid: subnets)`}},
		{"subnets not a list", "subnets: {a: b}\n", []string{`m.yml:1:10: subnets: must be a list, not a mapping`}},
		{"item not a mapping", "subnets:\n  - 10.0.0.0/8\n", []string{`m.yml:2:5: subnets[0]: must be a mapping with subnet and location, not a scalar`}},
		{"every error of the file", `subnets:
  - subnet: 10.0.0.1/24
    location: a
  - subnet: 10.0.0.0/33
    location: b
  - subnet: 10.0.0.0
    location: ""
  - location: c
  - subnet: 192.0.2.0/24
    location: d
    weight: 3
  - subnet: "::ffff:10.0.0.0/104"
    location: e
  - subnet: [1]
    location: {a: b}
  - subnet: 192.0.2.0/24
    location: f
  - subnet: 2001:db8::/32
    location: g
    location: h
  - subnet: 2001:DB8::/32
    location: i
  - subnet: fe80::/10%eth0
    location: j
`, []string{
			`m.yml:2:13: subnets[0].subnet: 10.0.0.1/24 has host bits set: the subnet is 10.0.0.0/24`,
			`m.yml:4:13: subnets[1].subnet: invalid subnet "10.0.0.0/33": want CIDR form such as 10.0.0.0/24 or 2001:db8::/48`,
			`m.yml:6:13: subnets[2].subnet: "10.0.0.0" is an address, not a subnet: write it in CIDR form, such as 10.0.0.0/32`,
			`m.yml:7:15: subnets[2].location: must not be empty`,
			`m.yml:8:5: subnets[3].subnet: a subnet in CIDR form is missing`,
			`m.yml:11:5: subnets[4]: unknown key "weight" (valid: subnet, location)`,
			`m.yml:12:13: subnets[5].subnet: ::ffff:10.0.0.0/104 is an IPv4-mapped IPv6 subnet: write IPv4 subnets in IPv4 form`,
			`m.yml:14:13: subnets[6].subnet: must be a subnet in CIDR form, not a list`,
			`m.yml:15:15: subnets[6].location: must be a location name, not a mapping`,
			`m.yml:16:13: subnets[7].subnet: duplicate subnet 192.0.2.0/24 (first at line 9)`,
			`m.yml:20:5: subnets[8]: duplicate key "location" (first at line 19)`,
			`m.yml:21:13: subnets[9].subnet: duplicate subnet 2001:db8::/32 (first at line 18)`,
			`m.yml:23:13: subnets[10].subnet: invalid subnet "fe80::/10%eth0"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := geo.ParseLocationMap("m.yml", []byte(tt.data))
			if err == nil {
				t.Fatalf("parsed: %+v", m)
			}
			var list config.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error %T is not a config.ErrorList", err)
			}
			if len(list) != len(tt.want) {
				t.Errorf("got %d errors, want %d:\n%v", len(list), len(tt.want), err)
			}
			for i, w := range tt.want {
				if i < len(list) && !strings.HasPrefix(list[i].Error(), w) {
					t.Errorf("error %d:\n got %s\nwant %s", i, list[i], w)
				}
			}
		})
	}
}

func FuzzParseLocationMap(f *testing.F) {
	f.Add([]byte(testutil.WorldMap))
	f.Add([]byte("subnets: []\n"))
	f.Add([]byte("subnets:\n  - {subnet: 0.0.0.0/0, location: a}\n  - {subnet: ::/0, location: b}\n"))
	f.Add([]byte("subnets:\n  - &a {subnet: 10.0.0.0/8, location: x}\n  - *a\n  - <<: *a\n"))
	f.Add([]byte("subnets: [\n"))
	addrs := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::ffff:10.0.0.1"),
		netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("::")}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := geo.ParseLocationMap("fuzz.yml", data)
		if err != nil {
			var list config.ErrorList
			if m != nil || !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("ParseLocationMap = %v, %v", m, err)
			}
			return
		}
		for _, a := range addrs {
			subnet, loc, bits, found := m.Lookup(a)
			if found && (!subnet.Contains(a.Unmap()) || loc == "") || bits < 0 || bits > a.BitLen() {
				t.Fatalf("Lookup(%s) = %v %q /%d %v", a, subnet, loc, bits, found)
			}
		}
	})
}
