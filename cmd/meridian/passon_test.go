package main

import (
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestPassedOnAnswersCarryECS serves example.org. with gslb (use_edns_csubnet, fallthrough)
// and, after it in the same server block, CoreDNS's file plugin with the zone's other names.
// The file plugin's answers of queries that carry ECS get it back with scope 0, as gslb's own
// answers do; without ECS they are the file plugin's, unchanged.
func TestPassedOnAnswersCarryECS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	zone := write("zone.yml", "records:\n  www.example.org.:\n    backends: [{address: 192.0.2.10}]\n")
	db := write("db.example.org", `$ORIGIN example.org.
@       3600 IN SOA ns1.example.org. hostmaster.example.org. 1 7200 3600 1209600 60
@       3600 IN NS  ns1.example.org.
ns1     3600 IN A   192.0.2.53
static  3600 IN A   192.0.2.99
`)
	s := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf("example.org.:%d {\n bind 127.0.0.1\n gslb {\n  zone example.org. %s\n  use_edns_csubnet\n  fallthrough\n }\n file %s example.org.\n}\n", port, zone, db)
	})
	query := func(name string, edns bool, ecs *dns.EDNS0_SUBNET) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		if edns {
			m.SetEdns0(1232, false)
			if ecs != nil {
				m.IsEdns0().Option = []dns.EDNS0{ecs}
			}
		}
		return s.Exchange(t, "udp", m)
	}
	ecsOf := func(m *dns.Msg) *dns.EDNS0_SUBNET {
		if opt := m.IsEdns0(); opt != nil {
			for _, o := range opt.Option {
				if e, ok := o.(*dns.EDNS0_SUBNET); ok {
					return e
				}
			}
		}
		return nil
	}
	v4 := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.ParseIP("198.51.100.0").To4()}
	v6 := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 2, SourceNetmask: 56, Address: net.ParseIP("2001:db8:1:200::")}

	for _, c := range []struct {
		name string
		ecs  *dns.EDNS0_SUBNET
	}{{"IPv4 subnet", v4}, {"IPv6 subnet", v6}} {
		// gslb's own answer, and the file plugin's answers of a name and of a missing name.
		for _, qname := range []string{"www.example.org.", "static.example.org.", "missing.example.org."} {
			r := query(qname, true, c.ecs)
			e := ecsOf(r)
			if e == nil {
				t.Errorf("%s, %s: the reply has no ECS:\n%v", c.name, qname, r)
				continue
			}
			if e.Family != c.ecs.Family || e.SourceNetmask != c.ecs.SourceNetmask || !e.Address.Equal(c.ecs.Address) {
				t.Errorf("%s, %s: ECS %v, want the query's %v", c.name, qname, e, c.ecs)
			}
			if e.SourceScope != 0 {
				t.Errorf("%s, %s: scope %d, want 0", c.name, qname, e.SourceScope)
			}
		}
	}
	if r := query("static.example.org.", true, v4); !slices.Equal(addresses(r), []string{"192.0.2.99"}) {
		t.Errorf("the file plugin's answer with ECS = %v", r.Answer)
	}

	// Without ECS, with or without EDNS, the file plugin's reply has none.
	for _, edns := range []bool{false, true} {
		r := query("static.example.org.", edns, nil)
		if ecsOf(r) != nil || !slices.Equal(addresses(r), []string{"192.0.2.99"}) || (r.IsEdns0() != nil) != edns {
			t.Errorf("EDNS %v, no ECS: reply\n%v", edns, r)
		}
	}
}
