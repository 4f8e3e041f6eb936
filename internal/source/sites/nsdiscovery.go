package sites

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/exchange"
	"github.com/miekg/dns"
)

// DefaultResolvConf is the resolver configuration PeersFromNS reads when it is given no
// parents and no other file.
const DefaultResolvConf = "/etc/resolv.conf"

// PeersFromNS returns the addresses, with port (1-65535), of zone's name servers as the parent zone
// serves them. It asks parents (host:port of the parent zone's authoritative servers, in
// order until one answers) with RD=0 for the NS of zone and reads the referral: the NS
// records in the authority section (or the answer section, from a parent that is also
// authoritative for zone) and their glue A and AAAA records in the additional section. NS
// names without glue are resolved with A and AAAA queries to the same parents. With no
// parents, it asks the servers of resolvConf (DefaultResolvConf when empty) with RD=1 for
// the same.
//
// The result is sorted and has no duplicates. An NS name that has no address is left out and
// its error joined into the returned error, which then comes with the other addresses. The
// exchanges go through c's Timeout, never signed: the parent and the resolver do not share
// the peers' key.
func PeersFromNS(ctx context.Context, c *exchange.Client, zone string, parents []string, resolvConf string, port int) ([]netip.AddrPort, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("the name servers of %s: port %d is not 1-65535", zone, port)
	}
	a := asker{client: &exchange.Client{Timeout: c.Timeout}, servers: parents}
	if len(parents) == 0 {
		servers, err := resolvers(resolvConf)
		if err != nil {
			return nil, err
		}
		a.servers, a.rd = servers, true
	}
	zone = dns.Fqdn(zone)
	r, err := a.ask(ctx, zone, dns.TypeNS)
	if err != nil {
		return nil, fmt.Errorf("the name servers of %s: %w", zone, err)
	}

	var names []string
	for _, rr := range slices.Concat(r.Answer, r.Ns) {
		if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, zone) {
			names = append(names, ns.Ns)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("the name servers of %s: the answer has no NS records (%s)", zone, dns.RcodeToString[r.Rcode])
	}

	var addrs []netip.AddrPort
	var errs []error
	for _, name := range names {
		ips := addresses(r.Extra, name)
		if len(ips) == 0 {
			ips, err = a.resolve(ctx, name)
			if err != nil {
				errs = append(errs, fmt.Errorf("name server %s of %s: %w", name, zone, err))
				continue
			}
		}
		for _, ip := range ips {
			addrs = append(addrs, netip.AddrPortFrom(ip, uint16(port)))
		}
	}
	slices.SortFunc(addrs, netip.AddrPort.Compare)
	return slices.Compact(addrs), errors.Join(errs...)
}

// asker asks its servers in order, with the RD bit rd, until one answers.
type asker struct {
	client  *exchange.Client
	servers []string
	rd      bool
}

// ask returns the first reply (NOERROR or NXDOMAIN) of the servers for name and qtype, or
// all their errors.
func (a asker) ask(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	var errs []error
	for _, server := range a.servers {
		r, err := a.client.ExchangeRD(ctx, server, name, qtype, a.rd)
		if err == nil {
			return r, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// resolve returns the A and AAAA addresses of name: an error when neither query is answered
// or the answers hold none.
func (a asker) resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	var ips []netip.Addr
	var errs []error
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		r, err := a.ask(ctx, name, qtype)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ips = append(ips, addresses(r.Answer, name)...)
	}
	if len(ips) == 0 {
		errs = append(errs, errors.New("no glue and no A or AAAA records"))
		return nil, errors.Join(errs...)
	}
	return ips, nil
}

// addresses returns the addresses of the A and AAAA records of name among rrs.
func addresses(rrs []dns.RR, name string) []netip.Addr {
	var ips []netip.Addr
	for _, rr := range rrs {
		if !strings.EqualFold(rr.Header().Name, name) {
			continue
		}
		var ip net.IP
		switch v := rr.(type) {
		case *dns.A:
			ip = v.A
		case *dns.AAAA:
			ip = v.AAAA
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			ips = append(ips, a.Unmap())
		}
	}
	return ips
}

// resolvers returns the name servers of the resolv.conf(5) file path (DefaultResolvConf when
// empty) as host:port: a nameserver is an address (port 53) or, as OpenBSD allows, an
// address with a port (127.0.0.1:5353, [::1]:5353). Like the C library, it skips the
// nameserver lines that are neither.
func resolvers(path string) ([]string, error) {
	if path == "" {
		path = DefaultResolvConf
	}
	cfg, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the system resolver's configuration: %w", err)
	}
	var servers []string
	for _, s := range cfg.Servers {
		if ip, err := netip.ParseAddr(s); err == nil {
			servers = append(servers, net.JoinHostPort(ip.String(), cfg.Port))
		} else if ap, err := netip.ParseAddrPort(s); err == nil {
			servers = append(servers, ap.String())
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%s names no nameserver address (of %q)", path, cfg.Servers)
	}
	return servers, nil
}
