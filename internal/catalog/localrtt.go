package catalog

import (
	"net/netip"

	"github.com/meridian-gslb/meridian/internal/published"
	"github.com/miekg/dns"
)

// publishedRTTs returns the record's localrtt-<name> answer: one TXT record, with TTL 0 (the
// peers read it every round), per backend with an address and a measured RTT, in the
// record's order; an address of two backends (two ports) once, the first's. Nil unless the
// record publishes its RTTs (config.Record.PublishRTT).
func (r *Record) publishedRTTs() []dns.RR {
	if !r.Config.PublishRTT {
		return nil
	}
	var out []dns.RR
	seen := map[netip.Addr]bool{}
	name := published.LocalRTTPrefix + r.Name()
	for _, b := range r.Backends {
		ip := b.Config.IP
		rtt := b.State.RTT()
		if !ip.IsValid() || rtt <= 0 || seen[ip] {
			continue
		}
		seen[ip] = true
		out = append(out, &dns.TXT{Hdr: header(name, dns.TypeTXT, 0), Txt: []string{published.FormatRTT(ip, rtt)}})
	}
	return out
}
