package answer

import (
	"fmt"
	"net"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// chosen returns the backends the record's mode (or fail-open) selects in both families,
// IPv4 first. Fail-specific and fail-closed choose no backend here.
func (r *builder) chosen() []*catalog.Backend {
	var picked []*catalog.Backend
	seen := make(map[*catalog.Backend]bool)
	for f := catalog.IPv4; f <= catalog.IPv6; f++ {
		sel := r.pick(f, nil)
		r.scope = max(r.scope, sel.scope)
		for _, be := range sel.backends {
			if !seen[be] {
				seen[be] = true
				picked = append(picked, be)
			}
		}
	}
	return picked
}

// srv answers SRV with the selected backends that have a port. A host-name backend is its own
// target; an address backend's target is the record's name, with the address in the additional
// section.
func (r *builder) srv() {
	ttl := r.rec.Config.TTL
	for _, be := range r.chosen() {
		c := be.Config
		if c.Port == 0 {
			continue
		}
		target := c.Address
		if !c.IsHost() {
			target = r.owner
			r.msg.Extra = append(r.msg.Extra, be.NewRR(r.owner, ttl))
		}
		r.msg.Answer = append(r.msg.Answer, &dns.SRV{
			Hdr:      dns.RR_Header{Name: r.owner, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: ttl},
			Priority: uint16(min(max(c.Priority, 0), 65535)),
			Weight:   uint16(min(max(c.Weight, 1), 65535)), // as in weighted mode, <= 0 counts as 1
			Port:     c.Port,
			Target:   target,
		})
	}
}

// svcb answers HTTPS and SVCB with one service record: in service mode at the record's own name
// with the selected addresses as hints, or in alias mode to a host-name backend chosen first.
func (r *builder) svcb() {
	picked := r.chosen()
	if len(picked) == 0 {
		return
	}
	hdr := dns.RR_Header{Name: r.owner, Rrtype: r.qtype, Class: dns.ClassINET, Ttl: r.rec.Config.TTL}
	svcb := dns.SVCB{Hdr: hdr, Priority: 1, Target: "."}
	if first := picked[0].Config; first.IsHost() {
		svcb.Priority, svcb.Target = 0, first.Address
	} else {
		var v4, v6 []net.IP
		for _, be := range picked {
			ip := be.Config.IP
			switch {
			case !ip.IsValid():
			case ip.Is4():
				a := ip.As4()
				v4 = append(v4, a[:])
			default:
				a := ip.As16()
				v6 = append(v6, a[:])
			}
		}
		if alpn := r.rec.Config.Settings().ALPN; len(alpn) > 0 {
			svcb.Value = append(svcb.Value, &dns.SVCBAlpn{Alpn: alpn})
		}
		if first.Port != 0 {
			svcb.Value = append(svcb.Value, &dns.SVCBPort{Port: first.Port})
		}
		if len(v4) > 0 {
			svcb.Value = append(svcb.Value, &dns.SVCBIPv4Hint{Hint: v4})
		}
		if len(v6) > 0 {
			svcb.Value = append(svcb.Value, &dns.SVCBIPv6Hint{Hint: v6})
		}
	}
	if r.qtype == dns.TypeHTTPS {
		r.msg.Answer = []dns.RR{&dns.HTTPS{SVCB: svcb}}
		return
	}
	r.msg.Answer = []dns.RR{&svcb}
}

// txt answers TXT with one line per backend: address, priority, health and whether it is enabled.
func (r *builder) txt() {
	for _, be := range r.rec.Backends {
		c := be.Config
		line := fmt.Sprintf("Backend: %s | Priority: %d | Status: %s | Enabled: %t", c.Address, c.Priority, be.Status(), c.Enable)
		r.msg.Answer = append(r.msg.Answer, &dns.TXT{
			Hdr: dns.RR_Header{Name: r.owner, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: r.rec.Config.TTL},
			Txt: []string{line},
		})
	}
}
