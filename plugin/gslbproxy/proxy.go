// Package gslbproxy is the CoreDNS adapter of Meridian's proxy model: the gslb_proxy plugin
// sits before the forward plugin to the operator's own authoritative servers, lets them answer,
// and rewrites the address answers of the names its zone files list by the health and steering
// of the backends it monitors (internal/proxy). It shares the gslb plugin's syntax, options and
// engine.
package gslbproxy

import (
	"context"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/nonwriter"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/proxy"
	"github.com/meridian-gslb/meridian/plugin/gslb"
)

// pluginName is the directive and logger name of the plugin.
const pluginName = "gslb_proxy"

// Proxy is the gslb_proxy plugin handler.
type Proxy struct {
	Next   plugin.Handler
	Engine *engine.Engine
	Answer answer.Options
}

// Name implements plugin.Handler.
func (p *Proxy) Name() string { return pluginName }

// ServeDNS implements plugin.Handler. It passes the query to the next plugin, keeps what that
// writes, rewrites it against the engine's snapshot and writes it, truncated to the client's
// buffer over UDP. It reads the snapshot and nothing else: no lock, no source.
func (p *Proxy) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	nw := nonwriter.New(w)
	rcode, err := plugin.NextOrFailure(pluginName, p.Next, ctx, nw, r)
	if nw.Msg == nil {
		// Nothing was written: the server writes the error reply of rcode.
		return rcode, err
	}
	src, _ := gslb.ClientOf(w)
	m := nw.Msg
	proxy.Rewrite(m, p.Engine.Snapshot(), p.Answer, proxy.Client{Request: r, Source: src, Geo: p.Engine.Geo()})
	// A rewritten answer may be larger than the upstream's (fallback records for fewer
	// addresses) and the upstream's may not have fit either: over UDP, cut it to the client's
	// buffer with TC set; over TCP, Scrub's size is the largest message.
	state := request.Request{W: w, Req: r}
	if werr := w.WriteMsg(state.Scrub(m)); werr != nil {
		return dns.RcodeServerFailure, plugin.Error(pluginName, werr)
	}
	return dns.RcodeSuccess, err
}

// Ready implements the ready plugin's Readiness: the plugin is ready once its zones are loaded.
func (p *Proxy) Ready() bool { return p.Engine.Snapshot() != nil }
