package canary

import (
	"context"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/exchange"
	"github.com/meridian-gslb/meridian/internal/periodic"
	"github.com/meridian-gslb/meridian/internal/publish"
)

// Logger is where the runner reports mismatches that appear and go; CoreDNS's plugin logger
// is one.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

// Found is a mismatch as the webhooks are told of it: where (a resolver or a parent server),
// about which name (or zone), with which ECS subnet, and what.
type Found struct {
	Target, Name, ECS string
	Mismatch
}

// key identifies a mismatch across rounds.
func (f Found) key() string { return f.Target + "|" + f.Name + "|" + f.ECS + "|" + f.Kind }

// Setup is what a runner works with, given again after each load of its block.
type Setup struct {
	Options config.CanaryOptions
	// NS returns the zones of the block with their name servers, as the zone files say.
	NS     func() map[string][]string
	Expect Expect
	// Report is told of each mismatch that appears (not again while it lasts).
	Report func(Found)
	Log    Logger
}

// Report is what one round found.
type Report struct {
	Time        time.Time    `json:"time"`
	Checks      []Check      `json:"checks"`
	Delegations []Delegation `json:"delegations"`
}

// Runner asks the block's resolvers and parent servers each interval, keeps the last round's
// report, and tells of the mismatches that appear. It outlives Corefile reloads with its
// block's health manager; Configure gives it each load's options.
type Runner struct {
	mu     sync.Mutex
	setup  Setup
	last   Report
	open   map[string]Found // the mismatches of the last round, by key
	client *exchange.Client
	loop   periodic.Loop
}

var _ publish.Publisher = (*Runner)(nil)

// NewRunner returns a runner that asks nothing until configured and started.
func NewRunner() *Runner {
	return &Runner{open: map[string]Found{}, client: &exchange.Client{Timeout: 3 * time.Second}}
}

// Name implements publish.Publisher.
func (r *Runner) Name() string { return "canaries" }

// Configure gives the runner its block's setup, from the next round on.
func (r *Runner) Configure(s Setup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setup = s
}

// Start implements publish.Publisher: the rounds start, the first at once.
func (r *Runner) Start() {
	r.loop.Start(func(ctx context.Context) { r.Round(ctx) }, func() time.Duration {
		r.mu.Lock()
		defer r.mu.Unlock()
		if d := r.setup.Options.Interval; d > 0 {
			return d
		}
		return config.DefaultResolverCanaryInterval
	})
}

// Stop implements publish.Publisher; the runner's series go with it.
func (r *Runner) Stop() {
	r.loop.Stop()
	r.client.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	publishMismatches(r.open, nil)
	r.open = map[string]Found{}
}

// Last returns the last round's report.
func (r *Runner) Last() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Round asks every resolver and parent now, keeps the report and tells of the mismatches
// that appeared, and returns the report.
func (r *Runner) Round(ctx context.Context) Report {
	r.mu.Lock()
	s := r.setup
	r.mu.Unlock()
	rep := Report{Time: time.Now(), Checks: []Check{}, Delegations: []Delegation{}}
	if s.Expect == nil {
		return rep
	}
	o := s.Options
	for _, res := range o.Resolvers {
		for _, name := range o.Names {
			rep.Checks = append(rep.Checks, r.ask(ctx, s.Expect, res, name, netip.Prefix{}))
			for _, p := range o.ECS {
				rep.Checks = append(rep.Checks, r.ask(ctx, s.Expect, res, name, p))
			}
		}
	}
	if len(o.Parents) > 0 && s.NS != nil {
		zones := s.NS()
		for _, parent := range o.Parents {
			for _, zone := range slices.Sorted(maps.Keys(zones)) {
				rep.Delegations = append(rep.Delegations, r.delegation(ctx, s.Expect, parent, zone, zones[zone]))
			}
		}
	}
	now := map[string]Found{}
	for _, c := range rep.Checks {
		for _, m := range c.Mismatches {
			f := Found{Target: c.Resolver, Name: c.Name, ECS: c.ECS, Mismatch: m}
			now[f.key()] = f
		}
	}
	for _, d := range rep.Delegations {
		for _, m := range d.Mismatches {
			f := Found{Target: d.Parent, Name: d.Zone, Mismatch: m}
			now[f.key()] = f
		}
	}
	r.mu.Lock()
	before := r.open
	r.open, r.last = now, rep
	publishMismatches(before, now)
	r.mu.Unlock()
	for k, f := range now {
		if _, was := before[k]; was {
			continue
		}
		if s.Log != nil {
			s.Log.Warningf("canary: %s, %s%s: %s", f.Target, f.Name, ecsText(f.ECS), f.Text)
		}
		if s.Report != nil {
			s.Report(f)
		}
	}
	for k, f := range before {
		if _, still := now[k]; !still && s.Log != nil {
			s.Log.Infof("canary: %s, %s%s: the %s mismatch is gone", f.Target, f.Name, ecsText(f.ECS), f.Kind)
		}
	}
	return rep
}

// ecsText is " (ECS subnet)", empty for none.
func ecsText(ecs string) string {
	if ecs == "" {
		return ""
	}
	return " (ECS " + ecs + ")"
}

// ask asks resolver name's A records, with the subnet ecs when it is valid, and compares the
// reply with what this instance answers.
func (r *Runner) ask(ctx context.Context, expect Expect, resolver, name string, ecs netip.Prefix) Check {
	c := Check{Resolver: resolver, Name: name, Type: "A", Time: time.Now(), Scope: -1, Answer: []string{}}
	q := answer.ExplainQuery(name, dns.TypeA, ecs) // with the subnet, when valid
	q.RecursionDesired = true
	if q.IsEdns0() == nil {
		q.SetEdns0(1232, false)
	}
	client := resolverAddr(resolver)
	if ecs.IsValid() {
		c.ECS = ecs.String()
	}
	var err error
	if c.Expected, err = expect(name, dns.TypeA, client, ecs); err != nil {
		c.Mismatches = append(c.Mismatches, Mismatch{Kind: KindError, Text: "this instance cannot answer it: " + err.Error()})
		return c
	}
	reply, err := r.client.ExchangeMsg(ctx, resolver, q)
	if err != nil {
		c.Mismatches = append(c.Mismatches, Mismatch{Kind: KindError, Text: err.Error()})
		return c
	}
	c.Rcode = dns.RcodeToString[reply.Rcode]
	c.Answer, c.TTL = addresses(reply.Answer, dns.TypeA)
	if opt := reply.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if s, ok := o.(*dns.EDNS0_SUBNET); ok {
				c.Scope = int(s.SourceScope)
			}
		}
	}
	c.compare()
	return c
}

// resolverAddr returns the address of a resolver's host:port, the zero Addr for a host name:
// the client this instance would see when the resolver asks from the address it listens on.
func resolverAddr(hostport string) netip.Addr {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// delegation asks parent for zone's NS records and compares its referral with the zone's.
func (r *Runner) delegation(ctx context.Context, expect Expect, parent, zone string, ns []string) Delegation {
	d := Delegation{Parent: parent, Zone: zone, Time: time.Now(), NS: []string{}, ExpectedNS: ns}
	inZone := func(n string) bool { return dns.IsSubDomain(zone, n) }
	for _, n := range ns {
		if !inZone(n) {
			continue
		}
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
			if e, err := expect(n, qtype, netip.Addr{}, netip.Prefix{}); err == nil && len(e.Answer) > 0 {
				if d.ExpectedGlue == nil {
					d.ExpectedGlue = map[string][]string{}
				}
				d.ExpectedGlue[n] = append(d.ExpectedGlue[n], e.Answer...)
			}
		}
	}
	reply, err := r.client.Exchange(ctx, parent, zone, dns.TypeNS)
	if err != nil {
		d.Mismatches = append(d.Mismatches, Mismatch{Kind: KindError, Text: err.Error()})
		return d
	}
	for _, rr := range append(slices.Clone(reply.Answer), reply.Ns...) {
		if n, ok := rr.(*dns.NS); ok && strings.EqualFold(n.Hdr.Name, zone) && !slices.Contains(d.NS, strings.ToLower(n.Ns)) {
			d.NS = append(d.NS, strings.ToLower(n.Ns))
		}
	}
	for _, rr := range reply.Extra {
		name := strings.ToLower(rr.Header().Name)
		if !inZone(name) {
			continue
		}
		if a, _ := addresses([]dns.RR{rr}, rr.Header().Rrtype); len(a) > 0 {
			if d.Glue == nil {
				d.Glue = map[string][]string{}
			}
			d.Glue[name] = append(d.Glue[name], a...)
		}
	}
	d.compare()
	return d
}
