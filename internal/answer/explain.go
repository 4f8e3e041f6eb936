package answer

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/policy"
	"github.com/meridian-gslb/meridian/internal/published"
)

// Explanation tells how one query is answered and why: for the admin API's explain, and for
// the debug log. Building it allocates freely; queries never do.
type Explanation struct {
	// Question is the name and type asked.
	Question string
	// Client is the address selection used (the ECS address or the transport source), and
	// ClientFrom says which.
	Client     netip.Addr
	ClientFrom string
	// Zone and Record are the names that matched; Record is empty when no record did.
	Zone, Record string
	// Mode is the record's selection mode, Fallback its fallback policy.
	Mode, Fallback string
	// Rcode and Answer are the response: its rcode and answer records in text form.
	Rcode  string
	Answer []string
	// Scope is the EDNS Client Subnet scope of the reply, or -1 when the query had no ECS.
	Scope int
	// Backends are the record's backends of the families asked, with their state.
	Backends []BackendNote
	// Steps say, in order, what was considered and what decided.
	Steps []string
}

// BackendNote is one backend as an explanation shows it.
type BackendNote struct {
	Family  string // IPv4 or IPv6
	Key     string // the backend's key (record|address|port)
	Address string
	// State is its health and whether it may be served: "down", "up: a candidate",
	// "up, disabled by an operator".
	State string
}

// String prints the explanation on a few lines.
func (e Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s for %s (%s): %s %v", e.Question, e.Client, e.ClientFrom, e.Rcode, e.Answer)
	if e.Scope >= 0 {
		fmt.Fprintf(&b, " scope /%d", e.Scope)
	}
	for _, n := range e.Backends {
		fmt.Fprintf(&b, "\n  %s backend %s: %s", n.Family, n.Address, n.State)
	}
	for _, s := range e.Steps {
		b.WriteString("\n  " + s)
	}
	return b.String()
}

// Explain answers q from snap like Respond and says how the answer was chosen.
func Explain(snap *catalog.Snapshot, opts Options, q Query) Explanation {
	opts.Limit = nil // no client asked: nothing to limit
	m, res := respond(snap, &opts, &q, false, true)
	return Describe(snap, opts, q, m, res)
}

// Describe explains m and res, what Respond answered to q from snap, without answering again
// (which would move a roundrobin rotation twice).
func Describe(snap *catalog.Snapshot, opts Options, q Query, m *dns.Msg, res Result) Explanation {
	e := Explanation{Scope: -1, Client: q.Source, ClientFrom: "transport source"}
	if len(q.Msg.Question) == 1 {
		e.Question = q.Msg.Question[0].Name + " " + dns.TypeToString[q.Msg.Question[0].Qtype]
	}
	if res == NotOurs {
		e.Steps = append(e.Steps, "the name is in no zone served here (or the query is not one gslb answers): passed to the next plugin")
		return e
	}
	e.Rcode = dns.RcodeToString[m.Rcode]
	for _, rr := range m.Answer {
		e.Answer = append(e.Answer, rr.String())
	}
	if ecs := findECS(m); ecs != nil {
		e.Scope = int(ecs.SourceScope)
	}

	// Walk the same path as Respond, keeping what it decided.
	b := builder{chooser: chooser{client: q.Source, geo: q.Geo, explaining: true}, req: q.Msg, qtype: q.Msg.Question[0].Qtype}
	b.qname = strings.ToLower(q.Msg.Question[0].Name)
	b.zone = snap.Zone(b.qname)
	e.Zone = b.zone.Origin
	if b.readEDNS(opts.UseECS) != dns.RcodeSuccess {
		e.Steps = append(e.Steps, "the query's EDNS is invalid: "+e.Rcode)
		return e
	}
	switch {
	case b.ecs != nil && b.client != q.Source:
		e.Client, e.ClientFrom = b.client, fmt.Sprintf("EDNS Client Subnet /%d", b.ecs.SourceNetmask)
	case !opts.UseECS && findECS(q.Msg) != nil:
		e.Steps = append(e.Steps, "the query's EDNS Client Subnet is ignored: use_edns_csubnet is off")
	}
	if step, ok := explainPublished(snap, &b, m); ok {
		e.Steps = append(e.Steps, step)
		return e
	}
	found := b.zone.Find(b.qname)
	rec, wildcard := found.Record, found.Wildcard
	_, static := staticAnswer(found.Static, rec != nil, b.qtype)
	switch {
	case found.Cut != nil && (b.qname != found.Cut.Name || b.qtype != dns.TypeDS):
		e.Steps = append(e.Steps, "delegated: "+found.Cut.Name+" has NS records, a referral to them (not authoritative)")
		return e
	case !found.Exists:
		e.Steps = append(e.Steps, "no such name in zone "+b.zone.Origin)
		return e
	case static:
		e.Steps = append(e.Steps, "answered from the zone's static records (static:)")
		return e
	case rec == nil:
		e.Steps = append(e.Steps, "the name holds no GSLB record: answered from the zone's own data")
		return e
	}
	b.rec, b.owner = rec, rec.Name()
	e.Record, e.Mode, e.Fallback = rec.Name(), string(rec.Config.Mode), string(rec.Config.Settings().Fallback.Mode)
	if wildcard {
		e.Steps = append(e.Steps, "matched the wildcard "+rec.Name())
	}
	families := []catalog.Family{catalog.IPv4, catalog.IPv6}
	if f, ok := catalog.FamilyOf(b.qtype); ok {
		families = []catalog.Family{f}
	}
	for _, f := range families {
		e.Backends = append(e.Backends, backendNotes(rec, f)...)
		e.Steps = append(e.Steps, explainFamily(&b, f)...)
		if v := rec.View(); v.Configured[f] {
			e.Steps = append(e.Steps, explainTTL(rec, v, f))
		}
	}
	return e
}

// findECS returns the EDNS Client Subnet option of m, or nil.
func findECS(m *dns.Msg) *dns.EDNS0_SUBNET {
	if opt := m.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if ecs, ok := o.(*dns.EDNS0_SUBNET); ok {
				return ecs
			}
		}
	}
	return nil
}

// explainFamily says how the mode of b's record chose among its backends of family f.
func explainFamily(b *builder, f catalog.Family) []string {
	rec := b.rec
	family := familyName(f)
	v := rec.View()
	var steps []string
	if !v.Configured[f] {
		return append(steps, fmt.Sprintf("%s: the record has no backend of this family", family))
	}
	if len(v.Healthy[f]) == 0 {
		if v.FallbackApplies(f) {
			steps = append(steps, fmt.Sprintf("%s: no backend is healthy: fallback policy %s answers", family, rec.Config.Settings().Fallback.Mode))
		}
		return steps
	}
	if v.Degraded[f] {
		steps = append(steps, fmt.Sprintf("%s: degraded: no backend is healthy, so the stale ones (of sites silent for the split-brain threshold) are answered: a stale answer beats an empty one", family))
	}
	if v.Failover[f] {
		steps = append(steps, fmt.Sprintf("%s: failover in progress: no backend of the best priority is healthy", family))
	}
	if t := v.Extra().Geo[f]; t != nil {
		var loc geo.Location
		b.geo.Lookup(b.client, &loc)
		ex := t.Explain(b.geo, &loc)
		for _, line := range strings.Split(ex.String(), "\n") {
			steps = append(steps, fmt.Sprintf("%s %s", family, strings.TrimSpace(line)))
		}
		steps = append(steps, fmt.Sprintf("%s: candidate indexes are the record's %s backends in file order: %s", family, family, backendList(v.Extra().GeoBackends[f])))
		return steps
	}
	if ch := v.Extra().Chains[f]; ch != nil {
		var loc geo.Location
		b.geo.Lookup(b.client, &loc)
		for _, tr := range ch.Explain(b.client, b.geo, &loc) {
			kept := make([]*catalog.Backend, len(tr.Kept))
			for i, k := range tr.Kept {
				kept[i] = v.Healthy[f][k]
			}
			when := ""
			if tr.Prepared {
				when = " (prepared when health or metrics changed)"
			}
			steps = append(steps, fmt.Sprintf("%s chain %s%s: %s: %s", family, tr.Step, when, tr.Note, backendList(kept)))
		}
		return steps
	}
	rule := fmt.Sprintf("%s: %s over %s", family, policy.Rule(rec.Config.Mode, policy.OptionsOf(rec.Config), b.client, len(v.Healthy[f])), backendList(v.Healthy[f]))
	if rec.Config.Mode == config.ModeRoundRobin {
		return append(steps, rule) // picking would move the rotation that queries share
	}
	var chosen []*catalog.Backend
	for _, i := range v.Sets[f].Pick(b.client, nil) {
		chosen = append(chosen, v.Healthy[f][i])
	}
	return append(steps, rule+" chose "+backendList(chosen))
}

// explainTTL says which TTL family f of rec answers with, and why.
func explainTTL(rec *catalog.Record, v *catalog.View, f catalog.Family) string {
	c := rec.Config
	why := ""
	switch r := v.TTLReason[f]; r {
	case catalog.TTLHealthy:
		why = "record_ttl: every enabled backend is healthy"
	case catalog.TTLDrainAhead:
		why = fmt.Sprintf("drain TTL %d, at most the seconds left: a scheduled drain starts within record_ttl %d", c.DrainAnswerTTL(), c.TTL)
		for _, be := range rec.Backends {
			if at := be.DrainAt(); !at.IsZero() {
				why += fmt.Sprintf("; %s is drained at %s", be.Config.Address, at.UTC().Format("2006-01-02T15:04:05Z"))
			}
		}
	default:
		why = fmt.Sprintf("degraded_ttl (%s; record_ttl %d while healthy)", r, c.TTL)
	}
	return fmt.Sprintf("%s ttl: %d s, %s", familyName(f), v.TTL[f], why)
}

func familyName(f catalog.Family) string {
	if f == catalog.IPv4 {
		return "IPv4"
	}
	return "IPv6"
}

// backendNotes describes the backends of rec that serve family f.
func backendNotes(rec *catalog.Record, f catalog.Family) []BackendNote {
	var notes []BackendNote
	for _, be := range rec.Backends {
		if be.Config.IP.IsValid() && be.Config.IP.Is4() != (f == catalog.IPv4) {
			continue
		}
		notes = append(notes, BackendNote{Family: familyName(f), Key: be.Key(), Address: be.Config.Address, State: backendState(be)})
	}
	return notes
}

// backendState describes a backend's health and whether it may be served.
func backendState(be *catalog.Backend) string {
	s := be.Status().String()
	switch c := be.Config; {
	case c.Remote:
		s += " (site " + c.Site() + "'s, as it publishes)"
	case c.Site() != "":
		s += " (site " + c.Site() + ", this site)"
	case c.External && len(c.Checks().HealthChecks) > 0:
		s += " (its health reported by a source, and probed here: both must pass)"
	case c.External:
		s += " (its health reported by a source, not probed here)"
	}
	if !be.Config.Probed() {
		s += " (not probed)"
	}
	if be.Status() == health.Stale && be.Enabled() {
		s += ": served only while no backend of its family is healthy"
	}
	switch be.Override() {
	case catalog.ForceDisable:
		s += ", disabled by an operator"
	case catalog.ForceEnable:
		s += ", enabled by an operator"
	case catalog.ForceUp:
		s += ", forced up by an operator (served as healthy whatever its probes say)"
	default:
		if !be.Config.Enable {
			s += ", disabled in the configuration"
		}
	}
	if at := be.DrainAt(); !at.IsZero() {
		s += ", drained by an operator from " + at.UTC().Format("2006-01-02T15:04:05Z")
	}
	if be.Healthy() {
		s += ": a candidate"
	}
	return s
}

func backendList(bs []*catalog.Backend) string {
	names := make([]string, len(bs))
	for i, be := range bs {
		names[i] = be.Config.Address
	}
	return "[" + strings.Join(names, " ") + "]"
}

// explainPublished says what a name that the site publishes for its peers answered (see
// builder.published), and reports false for other names.
func explainPublished(snap *catalog.Snapshot, b *builder, m *dns.Msg) (string, bool) {
	probe := *b
	if !probe.published(snap, &Options{}, true) {
		return "", false
	}
	if m.Rcode == dns.RcodeRefused {
		return "a name this site publishes for its peers: refused, the query is not signed with the peer key", true
	}
	if strings.HasPrefix(b.qname, published.HeartbeatPrefix) {
		return "this site's heartbeat, published for its peers (TTL 0)", true
	}
	if rec, ok := strings.CutPrefix(b.qname, published.LocalRTTPrefix); ok {
		return "published for the peers: this site's RTTs to the backends of " + rec + " (measure_remote, TTL 0)", true
	}
	return "published for the peers: this site's healthy backends of " + strings.TrimPrefix(b.qname, published.LocalTargetsPrefix), true
}

// ExplainQuery returns the query that Explain is asked about: name (made fully qualified)
// and qtype, with an EDNS Client Subnet option of ecs when it is valid (its address masked to
// its bits, as a resolver sends it).
func ExplainQuery(name string, qtype uint16, ecs netip.Prefix) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if ecs.IsValid() {
		m.SetEdns0(1232, false)
		family := uint16(1)
		if ecs.Addr().Is6() {
			family = 2
		}
		opt := m.IsEdns0()
		opt.Option = append(opt.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: family,
			SourceNetmask: uint8(ecs.Bits()), Address: net.IP(ecs.Masked().Addr().AsSlice())})
	}
	return m
}
