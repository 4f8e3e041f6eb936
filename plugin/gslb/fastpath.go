package gslb

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/metrics/vars"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// bypassed are the plugins that, before gslb in the chain, act on every query: the fast path,
// which answers without the chain, would bypass them, so the fastpath option refuses them.
// dnstap is refused without answer_log only: with it, the fast path writes its frames too.
var bypassed = []string{"acl", "any", "dnstap", "loadbalance", "rewrite", "tsig"}

// fastPaths is the fast path of one gslb block: an engine.FastPath on each UDP address of its
// server block, started when CoreDNS serves the address, and beside each the miekg/dns
// server that serves its slow path with CoreDNS's own server (every plugin, as on CoreDNS's
// socket).
type fastPaths struct {
	g    *GSLB
	opts config.FastPathOptions
	cfg  *dnsserver.Config

	mu      sync.Mutex
	calls   map[string]int // CoreDNS's sockets of each address that were served so far
	servers []*engine.FastPath
	slow    []*dns.Server
	stopped bool

	sampled  atomic.Uint64
	sampleOf uint64
}

// newFastPaths returns the fast path of g's block with opts, in the server block cfg: it hooks
// into CoreDNS's UDP servers of cfg (Config.UDPDecorateWriterFunc, which CoreDNS calls with its
// server when it serves each socket).
func newFastPaths(g *GSLB, opts config.FastPathOptions, cfg *dnsserver.Config) *fastPaths {
	f := &fastPaths{g: g, opts: opts, cfg: cfg, calls: map[string]int{}, sampleOf: uint64(opts.LogSample)}
	prev := cfg.UDPDecorateWriterFunc
	cfg.UDPDecorateWriterFunc = func(s *dnsserver.Server) dns.DecorateWriter {
		f.serving(s)
		if prev != nil {
			return prev(s)
		}
		return nil
	}
	return f
}

// check refuses a server block whose plugins the fast path would bypass. Every plugin is set
// up by the time CoreDNS starts its servers, and so its startup (OnStartup) fails.
func (f *fastPaths) check() error {
	for _, name := range bypassed {
		if name == "dnstap" && f.g.AnswerLog {
			continue
		}
		if f.cfg.Handler(name) != nil {
			return fmt.Errorf("fastpath: the %s plugin of this server block runs before gslb, and the fast path would bypass it: remove one of them", name)
		}
	}
	return nil
}

// serving starts the fast path of s's address once CoreDNS serves every one of its sockets
// there (the multisocket plugin's count), so that the fast path's sockets come after them in
// the address's SO_REUSEPORT group.
func (f *fastPaths) serving(s *dnsserver.Server) {
	f.mu.Lock()
	defer f.mu.Unlock()
	addr := strings.TrimPrefix(s.Addr, "dns://")
	f.calls[addr]++
	if f.stopped || f.calls[addr] != max(f.cfg.NumSockets, 1) || f.check() != nil {
		return
	}
	var metrics *fastMetrics
	if f.cfg.Handler("prometheus") != nil {
		metrics = newFastMetrics(s.Addr, f.cfg.Zone)
	}
	// In a binary upgrade, the parent's fast path serves the address until it leaves: the
	// sockets steer to this process's only then.
	upgrading := parentServes()
	srv, err := f.g.Engine.ListenFast(addr, f.opts.Loops, max(f.cfg.NumSockets, 1), !upgrading, f.observer(metrics))
	if err != nil {
		log.Errorf("%v: the queries to %s take CoreDNS's path", err, addr)
		return
	}
	if !upgrading && !srv.Steered() {
		log.Warningf("fastpath on %s: the kernel refused the steering program: CoreDNS's socket gets its share of the queries", addr)
	}
	slow := &dns.Server{PacketConn: srv.Slow(), Net: "udp", TsigSecret: s.TsigSecret, DecorateWriter: strictReplies,
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			ctx := context.WithValue(context.Background(), dnsserver.Key{}, s)
			ctx = context.WithValue(ctx, dnsserver.LoopKey{}, 0)
			s.ServeDNS(ctx, w, r)
		})}
	go func() {
		if err := slow.ActivateAndServe(); err != nil {
			log.Errorf("fastpath on %s: the slow path stopped: %v", addr, err)
		}
	}()
	f.servers, f.slow = append(f.servers, srv), append(f.slow, slow)
	log.Infof("fastpath on %s", addr)
	if upgrading {
		whenParentExits(func() {
			srv.Resteer()
			if !srv.Steered() {
				log.Warningf("fastpath on %s: the kernel refused the steering program: CoreDNS's socket gets its share of the queries", addr)
			}
		})
	}
}

// stop ends every fast path of the block.
func (f *fastPaths) stop() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	for i, srv := range f.servers {
		if err := srv.Close(f.slow[i].Shutdown); err != nil {
			log.Warningf("fastpath: stopping the slow path: %v", err)
		}
	}
	f.servers, f.slow = nil, nil
	return nil
}

// observer returns what the fast path tells of each answer: CoreDNS's query metrics (with
// metrics, nil without the prometheus plugin), the sampled log and the answer log.
func (f *fastPaths) observer(metrics *fastMetrics) engine.FastObserver {
	answers := f.g.Engine.AnswerLog()
	if metrics == nil && f.sampleOf == 0 && answers == nil {
		return nil
	}
	return func(pkt, resp []byte, src netip.Addr, start time.Time) {
		if metrics != nil {
			metrics.observe(pkt, resp, src, start)
		}
		if answers != nil {
			answers.Observe(f.g.Engine.Snapshot(), pkt, resp, src, start)
		}
		if f.sampleOf > 0 && f.sampled.Add(1)%f.sampleOf == 0 {
			logSample(pkt, resp, src)
		}
	}
}

// logSample logs one fast-path query in the log plugin's common format.
func logSample(pkt, resp []byte, src netip.Addr) {
	var m dns.Msg
	if m.Unpack(pkt) != nil || len(m.Question) != 1 {
		return
	}
	q := m.Question[0]
	log.Infof("[fastpath] %s - %d \"%s IN %s udp %d\" NOERROR qr,aa %d", src, m.Id, dns.TypeToString[q.Qtype], q.Name, len(pkt), len(resp))
}

// fastMetrics are CoreDNS's query metrics (those its prometheus plugin records for every query
// of the chain) for the fast path's answers, resolved once per family and type so that a query
// only adds to them.
type fastMetrics struct {
	requests, responses [2][2]prometheus.Counter // by family (IPv4, IPv6) and type (A, AAAA)
	do                  prometheus.Counter
	duration            prometheus.Observer
	reqSize, respSize   prometheus.Observer
}

// newFastMetrics resolves the series of CoreDNS's metrics that the fast path of the server
// (its address, "dns://HOST:PORT") of the block's zone records, with the labels the prometheus
// plugin gives them.
func newFastMetrics(server, zone string) *fastMetrics {
	m := &fastMetrics{}
	const view, proto = "", "udp"
	for fi, fam := range []string{"1", "2"} {
		for ti, qtype := range []string{"A", "AAAA"} {
			m.requests[fi][ti] = vars.RequestCount.WithLabelValues(server, zone, view, proto, fam, qtype)
		}
		m.responses[fi][0] = vars.ResponseRcode.WithLabelValues(server, zone, view, "NOERROR", pluginName)
		m.responses[fi][1] = m.responses[fi][0]
	}
	m.do = vars.RequestDo.WithLabelValues(server, zone, view)
	m.duration = vars.RequestDuration.WithLabelValues(server, zone, view)
	m.reqSize = vars.RequestSize.WithLabelValues(server, zone, view, proto)
	m.respSize = vars.ResponseSize.WithLabelValues(server, zone, view, proto)
	return m
}

// observe records one fast-path query and its response.
func (m *fastMetrics) observe(pkt, resp []byte, src netip.Addr, start time.Time) {
	fi := 0
	if !src.Is4() {
		fi = 1
	}
	qtype, do := answer.FastQueryInfo(pkt)
	ti := 0
	if qtype == dns.TypeAAAA {
		ti = 1
	}
	m.requests[fi][ti].Inc()
	m.responses[fi][ti].Inc()
	if do {
		m.do.Inc()
	}
	m.duration.Observe(time.Since(start).Seconds())
	m.reqSize.Observe(float64(len(pkt)))
	m.respSize.Observe(float64(len(resp)))
}
