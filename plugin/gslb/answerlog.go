package gslb

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/dnstap"
	"github.com/coredns/coredns/plugin/dnstap/msg"
	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/request"
	tap "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answerlog"
)

// The answer log (answer_log; docs/configuration.md, "Answer log"): CoreDNS's dnstap plugins
// of the server block write the frames, those of the plugin chain's answers as they always do,
// and those of the fast path's answers as the engine's answerlog.Log hands them over. Both
// carry Meridian's decision in their extra field, through the metadata plugin: gslb provides
// the label gslb/decision, which `extra "{/gslb/decision}"` writes.

// decisionLabel is the metadata label of a query's decision, as JSON.
const decisionLabel = pluginName + "/decision"

// cellKey is the context key of a query's answerlog.Cell.
type cellKey struct{}

// Metadata implements metadata.Provider: with answer_log, it gives each query the label
// gslb/decision, which says, once gslb answered it, what decided the answer (answer.Decide),
// and is empty before. Without answer_log it does nothing.
func (g *GSLB) Metadata(ctx context.Context, _ request.Request) context.Context {
	if !g.AnswerLog {
		return ctx
	}
	c := answerlog.NewCell(g.Answer)
	metadata.SetValueFunc(ctx, decisionLabel, c.Value)
	return context.WithValue(ctx, cellKey{}, c)
}

// hookAnswerLog checks, when the server starts, that the server block of g (at c, whose
// configuration is cfg) has what answer_log writes to, and attaches its dnstap plugins to the
// engine's answer log of the fast path, when it has one, until the server stops.
func hookAnswerLog(c *caddy.Controller, g *GSLB, cfg *dnsserver.Config) {
	detach := func() {}
	c.OnStartup(func() error {
		if err := checkAnswerLog(cfg); err != nil {
			return err
		}
		if l := g.Engine.AnswerLog(); l != nil {
			sink := &tapSink{g: g, taps: dnstapsOf(cfg), port: serverPort(cfg)}
			if len(cfg.ListenHosts) > 0 {
				sink.host = net.ParseIP(cfg.ListenHosts[0])
			}
			detach = l.Attach(sink.write)
		}
		return nil
	})
	onShutdown(c, func() error {
		detach()
		return nil
	})
}

// dnstapsOf returns the dnstap plugins of the server block cfg, in order.
func dnstapsOf(cfg *dnsserver.Config) []*dnstap.Dnstap {
	var taps []*dnstap.Dnstap
	h, _ := cfg.Handler("dnstap").(*dnstap.Dnstap)
	for ; h != nil; h, _ = h.Next.(*dnstap.Dnstap) {
		taps = append(taps, h)
	}
	return taps
}

// checkAnswerLog refuses a server block where answer_log has nothing to write to or no way to
// carry the decision, and warns of a dnstap plugin whose extra leaves the decision out.
func checkAnswerLog(cfg *dnsserver.Config) error {
	taps := dnstapsOf(cfg)
	if len(taps) == 0 {
		return fmt.Errorf("answer_log: the server block has no dnstap plugin to write the answers to: add one (see docs/configuration.md, \"Answer log\")")
	}
	if cfg.Handler("metadata") == nil {
		return fmt.Errorf("answer_log: the decision reaches the dnstap frames through the metadata plugin: add `metadata` to the server block")
	}
	for _, t := range taps {
		if !strings.Contains(t.ExtraFormat, "{/"+decisionLabel+"}") {
			log.Warningf("answer_log: a dnstap plugin of the server block has no `extra \"{/%s}\"`: its frames carry no decision", decisionLabel)
		}
	}
	return nil
}

// tapSink writes the fast path's answers to the dnstap plugins of a server block: for each, the
// frames the plugins write for an answer of the plugin chain (a CLIENT_QUERY, then a
// CLIENT_RESPONSE), with their extra field from the same metadata.
type tapSink struct {
	g    *GSLB
	taps []*dnstap.Dnstap
	// host and port are the server block's first address, for the frames' response address
	// and the replacer's {server_*}.
	host net.IP
	port int
}

// addrs returns an entry's client and server addresses, of its transport (which the frames'
// socket protocol follows); the fast path is not told the client's port.
func (s *tapSink) addrs(e *answerlog.Entry) (remote, local net.Addr) {
	if e.TCP {
		return &net.TCPAddr{IP: e.Client.AsSlice()}, &net.TCPAddr{IP: s.host, Port: s.port}
	}
	return &net.UDPAddr{IP: e.Client.AsSlice()}, &net.UDPAddr{IP: s.host, Port: s.port}
}

// write implements answerlog.Sink.
func (s *tapSink) write(e *answerlog.Entry) {
	req, decided := e.DecisionJSON(s.g.Answer, s.g.Engine.Geo())
	if req == nil {
		return
	}
	remote, local := s.addrs(e)
	state := request.Request{W: &tapWriter{remote: remote, local: local}, Req: req}
	before, after := withDecision(""), withDecision(decided)
	for _, t := range s.taps {
		qm := new(tap.Message)
		msg.SetQueryTime(qm, e.QueryTime)
		_ = msg.SetQueryAddress(qm, remote)
		msg.SetType(qm, tap.Message_CLIENT_QUERY)
		rm := new(tap.Message)
		msg.SetQueryTime(rm, e.QueryTime)
		msg.SetResponseTime(rm, e.ResponseTime)
		_ = msg.SetQueryAddress(rm, remote)
		msg.SetType(rm, tap.Message_CLIENT_RESPONSE)
		if t.IncludeRawMessage {
			qm.QueryMessage = append([]byte(nil), e.Query...) // the plugin's queue keeps them
			rm.ResponseMessage = append([]byte(nil), e.Response...)
		}
		t.TapMessageWithMetadata(before, qm, state)
		t.TapMessageWithMetadata(after, rm, state)
	}
}

// withDecision returns a context whose metadata gives decided as the query's decision.
func withDecision(decided string) context.Context {
	ctx := metadata.ContextWithMetadata(context.Background())
	metadata.SetValueFunc(ctx, decisionLabel, func() string { return decided })
	return ctx
}

// tapWriter is the dns.ResponseWriter of a fast-path answer as the dnstap plugins' replacer
// reads it: its addresses only.
type tapWriter struct {
	dns.ResponseWriter
	remote, local net.Addr
}

func (w *tapWriter) RemoteAddr() net.Addr { return w.remote }
func (w *tapWriter) LocalAddr() net.Addr  { return w.local }
