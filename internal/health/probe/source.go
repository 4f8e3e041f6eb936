package probe

// Probe sources (probe_source): the local address that a probe's connections leave from, so
// that an instance probes from a chosen vantage point (an interface, an uplink, a loopback
// alias). A check's own `probe_source` parameter wins over the instance's. Only tcp and http
// checks bind their source: their dialer (connDialer) binds each socket, before it connects, to
// the source of its address family that the probe's context carries.
//
// A bound probe runs on the poller like any other plain tcp or http probe: sourced's startAsync
// hands its sources to the poller, which binds each socket before it connects.

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"
)

// sourceTypes are the check types whose connections can leave from a chosen address.
var sourceTypes = map[string]bool{"tcp": true, "http": true}

// sourcesKey is the context key of a probe's source addresses.
type sourcesKey struct{}

// sourced is a prober whose connections leave from sources, at most one address per family.
type sourced struct {
	Prober
	sources []netip.Addr
	// instance marks the instance's probe_source, which the manager adds over the prober the
	// engine compiled (see WithoutInstanceSources); a check's own probe_source is part of that prober.
	instance bool
}

// startAsync runs the wrapped probe on the poller with the sources, when it can run there.
func (s *sourced) startAsync(p *Poller, _ []netip.Addr, deadline time.Time, done func(Result)) bool {
	as, ok := s.Prober.(asyncStarter)
	return ok && as.startAsync(p, s.sources, deadline, done)
}

// Probe runs the wrapped probe with the sources in its context.
func (s *sourced) Probe(ctx context.Context) Result {
	return s.Prober.Probe(context.WithValue(ctx, sourcesKey{}, s.sources))
}

// Close releases what the wrapped prober holds.
func (s *sourced) Close() error {
	Release(s.Prober)
	return nil
}

// checkSource reads the probe_source parameter of a check of type typ for target t: an IP
// address of the target's family, for the types that can bind one. It returns the zero Addr
// when the check has none (or an invalid one, recorded in p).
func checkSource(p *params, typ string, t Target) netip.Addr {
	v := p.String("probe_source", "")
	if v == "" {
		return netip.Addr{}
	}
	ip, err := netip.ParseAddr(v)
	if err != nil || ip.Zone() != "" {
		p.Errorf("probe_source", "%q is not an IP address", v)
		return netip.Addr{}
	}
	ip = ip.Unmap()
	if !sourceTypes[typ] {
		p.Errorf("probe_source", "only tcp and http checks can choose their source address")
	}
	if t.IP.IsValid() && t.IP.Unmap().Is4() != ip.Is4() {
		p.Errorf("probe_source", "%s is not of the address family of the target %s", ip, t.IP)
	}
	return ip
}

// withCheckSource returns prober bound to a check's probe_source, or prober itself when the
// check has none.
func withCheckSource(prober Prober, source netip.Addr) Prober {
	if !source.IsValid() {
		return prober
	}
	return &sourced{Prober: prober, sources: []netip.Addr{source}}
}

// WithInstanceSources returns the prober of a check of type typ bound to the instance's probe
// sources: prober itself when there are none, the type cannot bind them, or the check has a
// probe_source of its own.
func WithInstanceSources(prober Prober, typ string, sources []netip.Addr) Prober {
	if _, own := prober.(*sourced); own || len(sources) == 0 || !sourceTypes[typ] {
		return prober
	}
	return &sourced{Prober: prober, sources: sources, instance: true}
}

// WithoutInstanceSources returns p as the engine compiled it: without the instance's sources.
func WithoutInstanceSources(p Prober) Prober {
	if s, ok := p.(*sourced); ok && s.instance {
		return s.Prober
	}
	return p
}

// bindSource is the ControlContext of the probes' dialers: it binds the socket to the source of
// its family that ctx carries, if any.
func bindSource(ctx context.Context, network, _ string, c syscall.RawConn) error {
	sources, _ := ctx.Value(sourcesKey{}).([]netip.Addr)
	return bindRaw(c, network, sources)
}

// SourceDialer returns a dialer whose connections leave from the address of their family among
// sources (the system's choice for a family without one), bounded by timeout. The canaries of
// quorum mode use it.
func SourceDialer(sources []netip.Addr, timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: -1, ControlContext: func(_ context.Context, network, _ string, c syscall.RawConn) error {
		return bindRaw(c, network, sources)
	}}
}

// bindRaw binds the socket c of network ("tcp4", "tcp6") to the source of its family.
func bindRaw(c syscall.RawConn, network string, sources []netip.Addr) error {
	sa := sourceSockaddr(sources, strings.HasSuffix(network, "6"))
	if sa == nil {
		return nil
	}
	var err error
	if cerr := c.Control(func(fd uintptr) { err = syscall.Bind(int(fd), sa) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return os.NewSyscallError("bind", err)
	}
	return nil
}

// sourceSockaddr returns the address (port 0) that a socket of the family (IPv6 or not) binds
// to: the source of that family, or nil when sources have none.
func sourceSockaddr(sources []netip.Addr, v6 bool) syscall.Sockaddr {
	s, ok := sourceFor(sources, v6)
	switch {
	case !ok:
		return nil
	case v6:
		return &syscall.SockaddrInet6{Addr: s.As16()}
	}
	return &syscall.SockaddrInet4{Addr: s.As4()}
}

// sourceFor returns the source among sources of the family (IPv6 or not), if there is one.
func sourceFor(sources []netip.Addr, v6 bool) (netip.Addr, bool) {
	for _, s := range sources {
		if s.Is6() == v6 {
			return s, true
		}
	}
	return netip.Addr{}, false
}
