package discovery

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// fetchDNS reads the SVCB (dns_svcb) or HTTPS (dns_https) records of the block's service name
// from its DNS server. Each record in service mode gives its port (0 when it has none) and its
// addresses: the ipv4hint and ipv6hint values, or, when it has neither, the A and AAAA records
// of its target (the owner name when the target is ".") from the same server. Records in alias
// mode (priority 0) are skipped.
func fetchDNS(ctx context.Context, d *config.Discovery) ([]Endpoint, error) {
	qtype := dns.TypeSVCB
	if d.Type == config.DiscoveryHTTPS {
		qtype = dns.TypeHTTPS
	}
	answer, err := query(ctx, d.Endpoint, d.Service, qtype)
	if err != nil {
		return nil, err
	}
	var eps []Endpoint
	for _, rr := range answer {
		var rec *dns.SVCB
		switch v := rr.(type) {
		case *dns.SVCB:
			rec = v
		case *dns.HTTPS:
			rec = &v.SVCB
		}
		if rec == nil || rec.Priority == 0 || rr.Header().Rrtype != qtype {
			continue
		}
		var port uint16
		var ips []netip.Addr
		for _, kv := range rec.Value {
			switch v := kv.(type) {
			case *dns.SVCBPort:
				port = v.Port
			case *dns.SVCBIPv4Hint:
				ips = appendIPs(ips, v.Hint)
			case *dns.SVCBIPv6Hint:
				ips = appendIPs(ips, v.Hint)
			}
		}
		if len(ips) == 0 {
			target := rec.Target
			if target == "." {
				target = rec.Hdr.Name
			}
			if ips, err = resolve(ctx, d.Endpoint, target); err != nil {
				return nil, err
			}
		}
		for _, ip := range ips {
			eps = append(eps, Endpoint{IP: ip, Port: port})
		}
	}
	return eps, nil
}

// resolve returns the A and AAAA addresses of name from server.
func resolve(ctx context.Context, server, name string) ([]netip.Addr, error) {
	var ips []netip.Addr
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		answer, err := query(ctx, server, name, qtype)
		if err != nil {
			return nil, err
		}
		for _, rr := range answer {
			switch v := rr.(type) {
			case *dns.A:
				ips = appendIPs(ips, []net.IP{v.A})
			case *dns.AAAA:
				ips = appendIPs(ips, []net.IP{v.AAAA})
			}
		}
	}
	return ips, nil
}

// query asks server for name and qtype over UDP, again over TCP when the answer is truncated,
// and returns the answer section; any rcode but NOERROR is an error.
func query(ctx context.Context, server, name string, qtype uint16) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(dns.DefaultMsgSize, false)
	c := &dns.Client{}
	r, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.ExchangeContext(ctx, m, server)
	}
	if err != nil {
		return nil, fmt.Errorf("query %s %s at %s: %w", name, dns.TypeToString[qtype], server, err)
	}
	if r.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("query %s %s at %s: %s", name, dns.TypeToString[qtype], server, dns.RcodeToString[r.Rcode])
	}
	return r.Answer, nil
}

func appendIPs(ips []netip.Addr, from []net.IP) []netip.Addr {
	for _, ip := range from {
		if a, ok := netip.AddrFromSlice(ip); ok {
			ips = append(ips, a.Unmap())
		}
	}
	return ips
}
