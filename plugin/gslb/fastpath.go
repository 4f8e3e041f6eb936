package gslb

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// bypassed are the plugins that, before gslb in the chain, act on every query: the fast path,
// which answers without the chain, would bypass them, so the fastpath option refuses them.
// dnstap is refused without answer_log only: with it, the fast path writes its frames too.
var bypassed = []string{"acl", "any", "dnstap", "loadbalance", "rewrite", "tsig"}

// fastPaths is the fast path of one gslb block: an engine.FastPath on each address of its
// server block (UDP and TCP), started when CoreDNS serves the address, and beside each the
// miekg/dns servers that serve its slow path with CoreDNS's own server (every plugin, as on
// CoreDNS's sockets).
type fastPaths struct {
	g    *GSLB
	opts config.FastPathOptions
	cfg  *dnsserver.Config

	mu      sync.Mutex
	calls   map[string]int // CoreDNS's sockets of each address that were served so far
	servers []*engine.FastPath
	slow    []*slowServers
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
	answers := f.g.Answer
	answers.Fallthrough = fallZones(f.g.Fall.Zones)
	answers.Exclude = otherZones(s, f.cfg.Zone)
	// CoreDNS's dnssec plugin signs the answers to the queries with the DO bit and answers
	// DNSKEY: they take its path.
	answers.PluginSigns = f.cfg.Handler("dnssec") != nil
	srv, err := f.g.Engine.ListenFast(addr, engine.FastOptions{
		Loops: f.opts.Loops, Others: max(f.cfg.NumSockets, 1), Steer: !upgrading, Observe: f.observer(metrics), Answer: answers,
		TCP: &engine.FastTCP{ReadTimeout: s.ReadTimeout, IdleTimeout: s.IdleTimeout, WriteTimeout: s.WriteTimeout,
			MaxConns: f.opts.TCPMaxConns, MaxConnsPerClient: f.opts.TCPMaxConnsPerClient},
	})
	if err != nil {
		log.Errorf("%v: the queries to %s take CoreDNS's path", err, addr)
		return
	}
	if !upgrading && !srv.Steered() {
		log.Warningf("fastpath on %s: the kernel refused the steering program: CoreDNS's sockets get their share of the queries", addr)
	}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		ctx := context.WithValue(context.Background(), dnsserver.Key{}, s)
		ctx = context.WithValue(ctx, dnsserver.LoopKey{}, 0)
		s.ServeDNS(ctx, w, r)
	})
	slow := &slowServers{
		udp: &dns.Server{PacketConn: srv.Slow(), Net: "udp", TsigSecret: s.TsigSecret, DecorateWriter: strictReplies, Handler: handler},
		tcp: &dns.Server{Listener: srv.SlowTCP(), Net: "tcp", TsigSecret: s.TsigSecret, Handler: handler,
			ReadTimeout: s.ReadTimeout, WriteTimeout: s.WriteTimeout, MaxTCPQueries: -1},
	}
	for _, ds := range []*dns.Server{slow.udp, slow.tcp} {
		go func() {
			if err := ds.ActivateAndServe(); err != nil {
				log.Errorf("fastpath on %s: the slow path (%s) stopped: %v", addr, ds.Net, err)
			}
		}()
	}
	f.servers, f.slow = append(f.servers, srv), append(f.slow, slow)
	log.Infof("fastpath on %s", addr)
	if upgrading {
		whenParentExits(func() {
			srv.Resteer()
			if !srv.Steered() {
				log.Warningf("fastpath on %s: the kernel refused the steering program: CoreDNS's sockets get their share of the queries", addr)
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
		if err := srv.Close(f.slow[i].shutdown); err != nil {
			log.Warningf("fastpath: stopping the slow path: %v", err)
		}
	}
	f.servers, f.slow = nil, nil
	return nil
}

// slowServers are the miekg/dns servers of an address's slow path, which run CoreDNS's server
// for what the fast path does not answer: one reads the UDP packets the loops hand over, the
// other the TCP queries, a connection each.
type slowServers struct {
	udp, tcp *dns.Server
}

// shutdown stops both servers.
func (s *slowServers) shutdown() error {
	return errors.Join(s.udp.Shutdown(), s.tcp.Shutdown())
}

// fallZones returns the fallthrough option's zones as the fast path reads them: lower case,
// fully qualified ("." for every name).
func fallZones(zones []string) []string {
	out := make([]string, 0, len(zones))
	for _, z := range zones {
		out = append(out, strings.ToLower(dns.Fqdn(z)))
	}
	return out
}

// otherZones returns the zones of s's other server blocks that lie below zone (the gslb
// block's): CoreDNS's server routes their names to those blocks, and the fast path must leave
// them to it. CoreDNS keeps a server's zones in an unexported field, read here with reflect;
// should it go, there are none (and the fast path answers every name of the gslb zones, as
// when the gslb block is alone on its address).
func otherZones(s *dnsserver.Server, zone string) []string {
	v := reflect.ValueOf(s).Elem().FieldByName("zones")
	if !v.IsValid() || v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.String {
		return nil
	}
	zone = strings.ToLower(zone)
	var out []string
	for _, k := range v.MapKeys() {
		if z := strings.ToLower(k.String()); z != zone && dns.IsSubDomain(zone, z) {
			out = append(out, z)
		}
	}
	slices.Sort(out)
	return out
}

// observer returns what the fast path tells of each answer: CoreDNS's query metrics (with
// metrics, nil without the prometheus plugin), the sampled log and the answer log.
func (f *fastPaths) observer(metrics *fastMetrics) engine.FastObserver {
	answers := f.g.Engine.AnswerLog()
	if metrics == nil && f.sampleOf == 0 && answers == nil {
		return nil
	}
	return func(pkt, resp []byte, src netip.Addr, tcp bool, start time.Time) {
		if metrics != nil {
			metrics.observe(pkt, resp, src, tcp, start)
		}
		if answers != nil {
			answers.Observe(f.g.Engine.Snapshot(), pkt, resp, src, tcp, start)
		}
		if f.sampleOf > 0 && f.sampled.Add(1)%f.sampleOf == 0 {
			logSample(pkt, resp, src, tcp)
		}
	}
}
