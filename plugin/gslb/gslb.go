// Package gslb is the CoreDNS adapter of Meridian: it parses the gslb block of a Corefile,
// runs an engine for it, and answers queries from the engine's current snapshot. Everything
// else lives in Meridian's internal packages, which do not know about CoreDNS.
package gslb

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/pkg/transport"
	"github.com/coredns/coredns/plugin/transfer"
	tsigplugin "github.com/coredns/coredns/plugin/tsig"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/answerlog"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// pluginName is the directive and logger name of the plugin.
const pluginName = "gslb"

// GSLB is the gslb plugin handler.
type GSLB struct {
	Next   plugin.Handler
	Engine *engine.Engine
	Answer answer.Options
	Fall   fall.F
	// AnswerLog is set by answer_log: the queries' decisions are metadata (gslb/decision) for
	// the server block's dnstap plugins.
	AnswerLog bool
	// PeerKey is the name of the peer_tsig key (canonical), "" without one: queries signed
	// with it, which the server verified, are the peers' (answer.Query.Signed) and get signed
	// answers.
	PeerKey string
	// PlainDNS is set when every address of the server block is plain DNS (no scheme, or
	// dns://): ServeDNS then does not look up the transport of each query's server (schemeOf).
	PlainDNS bool
}

// Name implements plugin.Handler.
func (g *GSLB) Name() string { return pluginName }

// ServeDNS implements plugin.Handler. It reads the engine's snapshot and nothing else: no lock,
// no map write, no allocation beyond the response (and, for a query with ECS that falls
// through to the next plugin, the writer that adds ECS to its reply).
func (g *GSLB) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	src, tcp := ClientOf(w)
	scheme := transport.DNS
	if !g.PlainDNS {
		scheme = schemeOf(ctx)
		tcp = tcp || scheme != transport.DNS
	}
	snap, q := g.Engine.Snapshot(), answer.Query{Msg: r, Source: src, TCP: tcp, Geo: g.Engine.Geo()}
	var tsig *dns.TSIG
	if g.PeerKey != "" {
		if tsig = r.IsTsig(); tsig != nil && strings.EqualFold(tsig.Hdr.Name, g.PeerKey) && w.TsigStatus() == nil {
			q.Signed = true
		}
		if name, ok := tsigplugin.ValidatedKeyName(ctx); ok && tsig == nil && strings.EqualFold(dns.Fqdn(name), g.PeerKey) {
			q.Signed = true // the tsig plugin verified it (and signs the reply)
		}
	}
	m, res := answer.Respond(snap, g.Answer, q)
	if q.Signed && m != nil && tsig != nil {
		// The server signs what carries a TSIG record, with the key and the request's MAC.
		m.SetTsig(tsig.Hdr.Name, tsig.Algorithm, tsig.Fudge, time.Now().Unix())
	}
	if g.AnswerLog && m != nil {
		if c, ok := ctx.Value(cellKey{}).(*answerlog.Cell); ok {
			c.Note(snap, q, m) // for the dnstap plugins' gslb/decision
		}
	}
	if clog.D.Value() {
		// Under CoreDNS's debug plugin only: one line per query saying why it got its answer.
		log.Debug(answer.Describe(snap, g.Answer, q, m, res).String())
	}
	switch res {
	case answer.Dropped:
		return dns.RcodeSuccess, nil // rate limiting: nothing is written
	case answer.NotOurs:
		return plugin.NextOrFailure(pluginName, g.Next, ctx, w, r)
	case answer.NameError:
		if g.Fall.Through(r.Question[0].Name) {
			// The name is in our zone: its reply carries ECS as ours do.
			return plugin.NextOrFailure(pluginName, g.Next, ctx, answer.PassOnWriter(w, r, g.Answer), r)
		}
	}
	if scheme == transport.QUIC {
		if err := writeQUIC(w, r, m); err != nil {
			return dns.RcodeServerFailure, plugin.Error(pluginName, err)
		}
		return dns.RcodeSuccess, nil
	}
	if err := writeOwnSize(w, r, m); err != nil {
		return dns.RcodeServerFailure, plugin.Error(pluginName, err)
	}
	return dns.RcodeSuccess, nil
}

// writeQUIC writes m, the reply to r over DNS over QUIC, whole. CoreDNS's writer of DNS over
// QUIC gives the client's address as UDP, and its ScrubWriter then truncates what does not fit
// the client's UDP size (512 bytes without EDNS), which RFC 9250 has no use for: a reply that
// may not fit is written as bytes past the ScrubWriter, and the stream closed as its
// WriteMsg would (the plugins that record the reply, log and prometheus, then see its size but
// not its rcode). The others go through WriteMsg.
func writeQUIC(w dns.ResponseWriter, r, m *dns.Msg) error {
	if m.Len() <= dns.MinMsgSize {
		return writeOwnSize(w, r, m)
	}
	wire, err := m.Pack()
	if err != nil {
		return err
	}
	if _, err := w.Write(wire); err != nil {
		return err
	}
	return w.Close()
}

// writeOwnSize writes m, the reply to r, so that its OPT advertises Meridian's own UDP size as
// answer built it. CoreDNS's server wraps the writer in a ScrubWriter, whose WriteMsg copies the
// request's UDP size into the reply's OPT (the client's 4096, or even 0); the request's size is
// Meridian's while the reply is written, and the client's again once it is (for the log and the
// plugins that read the request later). The reply is already cut to the client's size.
func writeOwnSize(w dns.ResponseWriter, r, m *dns.Msg) error {
	if opt, own := r.IsEdns0(), m.IsEdns0(); opt != nil && own != nil {
		size := opt.UDPSize()
		opt.SetUDPSize(own.UDPSize())
		defer opt.SetUDPSize(size)
	}
	return w.WriteMsg(m)
}

// Transfer implements the transfer plugin's Transferer: a transfer of one of the block's
// zones from serial (0: AXFR) carries its SOA, NS, static records and every record's current
// answer (see docs/configuration.md, "Zone transfers"), or the SOA alone when the secondary
// is up to date. It fails with transfer.ErrNotAuthoritative for other zones.
func (g *GSLB) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	rrs, ok := g.Engine.Transfer(strings.ToLower(dns.Fqdn(zone)), serial)
	if !ok {
		return nil, transfer.ErrNotAuthoritative
	}
	ch := make(chan []dns.RR, 1)
	ch <- rrs
	close(ch)
	return ch, nil
}

// Ready implements the ready plugin's Readiness: the plugin is ready once its zones are loaded.
func (g *GSLB) Ready() bool { return g.Engine.Snapshot() != nil }

// schemeOf returns the transport of the server the query came to: dns, or tls, quic, https...
// Those others are streams, whose answers are never truncated nor rate-limited, though DNS
// over QUIC's writer gives a UDP address.
func schemeOf(ctx context.Context) string {
	if s, ok := ctx.Value(dnsserver.Key{}).(*dnsserver.Server); ok {
		if scheme, _, found := strings.Cut(s.Addr, "://"); found {
			return scheme
		}
	}
	return transport.DNS
}

// ClientOf returns the transport address of the client of w and whether it came over a stream.
func ClientOf(w dns.ResponseWriter) (netip.Addr, bool) {
	switch a := w.RemoteAddr().(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap(), false
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap(), true
	default:
		return netip.Addr{}, w.LocalAddr() != nil && w.LocalAddr().Network() != "udp"
	}
}
