package answer

import (
	"net"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestAddECS(t *testing.T) {
	query := subnet(1, 24, "198.51.100.0")
	echo := func(m *dns.Msg) *dns.EDNS0_SUBNET { return findECS(m) }
	big := func() *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion("big.example.org.", dns.TypeTXT)
		m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: "big.example.org.", Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{strings.Repeat("x", 200), strings.Repeat("y", 240)}}}
		return m
	}
	for _, c := range []struct {
		name   string
		reply  func() *dns.Msg
		limit  int
		want   bool // the reply carries ECS with scope 0
		extras int  // OPT records in the reply
	}{
		{"no OPT: one is added", func() *dns.Msg { m := new(dns.Msg); m.SetQuestion("a.example.org.", dns.TypeA); return m }, 512, true, 1},
		{"OPT without ECS", func() *dns.Msg {
			m := new(dns.Msg)
			m.SetQuestion("a.example.org.", dns.TypeA)
			m.SetEdns0(4096, true)
			return m
		}, 512, true, 1},
		{"too big for UDP", big, big().Len() + 5, false, 0},
		{"big over TCP", big, 0, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := c.reply()
			addECS(m, query, false, c.limit)
			e := echo(m)
			if got := e != nil; got != c.want {
				t.Fatalf("ECS in the reply: %v, want %v (%v)", got, c.want, m)
			}
			if e != nil && (e.SourceScope != 0 || e.SourceNetmask != 24 || e.Family != 1 || !e.Address.Equal(net.ParseIP("198.51.100.0"))) {
				t.Errorf("ECS = %v", e)
			}
			opts := 0
			for _, rr := range m.Extra {
				if rr.Header().Rrtype == dns.TypeOPT {
					opts++
				}
			}
			if opts != c.extras {
				t.Errorf("%d OPT records, want %d", opts, c.extras)
			}
			if c.limit > 0 && m.Len() > c.limit {
				t.Errorf("reply of %d bytes over the limit %d", m.Len(), c.limit)
			}
		})
	}

	// A reply that has ECS already keeps its own.
	m := new(dns.Msg)
	m.SetQuestion("a.example.org.", dns.TypeA)
	m.SetEdns0(1232, false)
	own := subnet(1, 16, "203.0.113.0")
	own.SourceScope = 16
	m.IsEdns0().Option = []dns.EDNS0{own}
	addECS(m, query, false, 512)
	if opt := m.IsEdns0(); len(opt.Option) != 1 || opt.Option[0] != own {
		t.Errorf("the reply's own ECS was changed: %v", opt)
	}
}
