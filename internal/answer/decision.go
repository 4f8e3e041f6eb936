package answer

import (
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// The kinds of answer a Decision tells apart.
const (
	// KindRecord is an answer of a GSLB record: its mode's choice or its fallback policy's.
	KindRecord = "record"
	// KindZone is an answer from the zone's own data: SOA, NS, static records, NODATA.
	KindZone = "zone"
	// KindNXDomain is a name that does not exist.
	KindNXDomain = "nxdomain"
	// KindReferral is a referral to a delegation's name servers.
	KindReferral = "referral"
	// KindPublished is a name this site publishes for its peers (localtargets-, localrtt-,
	// its heartbeat).
	KindPublished = "published"
	// KindError is an error the query itself caused: an invalid EDNS, a refused transfer, a
	// NOTIFY.
	KindError = "error"
)

// Decision is what decided one answer: what the answer log carries in each frame's extra
// field, as JSON (docs/configuration.md, "Answer log"). Building it allocates; the query path
// never does.
type Decision struct {
	// Kind is what answered (KindRecord, KindZone, ...).
	Kind string `json:"kind"`
	// Record is the GSLB record that answered, Mode its mode and, for mode chain, Step the
	// step that decided (policy.Chain.Decider).
	Record string `json:"record,omitempty"`
	Mode   string `json:"mode,omitempty"`
	Step   string `json:"step,omitempty"`
	// Backends are what the record's answer holds, in order: the chosen backends' addresses
	// (or host name), or what the fallback policy answered.
	Backends []string `json:"backends,omitempty"`
	// Fallback is the fallback policy that answered, empty when the mode chose: no backend
	// of the family was healthy.
	Fallback string `json:"fallback,omitempty"`
	// Degraded is set when only stale backends (of sites silent for the split-brain
	// threshold) were left to answer; Failover when mode failover answered from a worse
	// priority than the best configured.
	Degraded bool `json:"degraded,omitempty"`
	Failover bool `json:"failover,omitempty"`
	// Client is the EDNS Client Subnet the record selected for, when it did (use_edns_csubnet),
	// and Scope the scope the reply gave it; both absent without one.
	Client string `json:"client,omitempty"`
	Scope  *int   `json:"scope,omitempty"`
}

// Decide says what decided m, the response Respond gave q from snap (with opts), without
// answering again: a roundrobin rotation does not turn, nothing is counted. It is for the
// answer log, beside the query path, never on it.
func Decide(snap *catalog.Snapshot, opts Options, q Query, m *dns.Msg) Decision {
	req := q.Msg
	if m == nil || len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		return Decision{Kind: KindError}
	}
	b := builder{chooser: chooser{client: q.Source, geo: q.Geo, explaining: true}, req: req, qtype: req.Question[0].Qtype}
	b.qname = strings.ToLower(req.Question[0].Name)
	if b.zone = snap.Zone(b.qname); b.zone == nil {
		return Decision{Kind: KindError}
	}
	var d Decision
	if b.readEDNS(opts.UseECS) != dns.RcodeSuccess || b.qtype == dns.TypeAXFR || b.qtype == dns.TypeIXFR {
		return Decision{Kind: KindError}
	}
	if ecs := findECS(m); ecs != nil && b.ecs != nil {
		scope := int(ecs.SourceScope)
		d.Client, d.Scope = b.ecs.Address.String()+"/"+strconv.Itoa(int(b.ecs.SourceNetmask)), &scope
	}
	if probe := b; probe.published(snap, &Options{}, true) {
		d.Kind = KindPublished
		return d
	}
	found := b.zone.Find(b.qname)
	_, static := staticAnswer(found.Static, found.Record != nil, b.qtype)
	switch {
	case found.Cut != nil && (b.qname != found.Cut.Name || b.qtype != dns.TypeDS):
		d.Kind = KindReferral
		return d
	case !found.Exists:
		d.Kind = KindNXDomain
		return d
	case static || found.Record == nil:
		d.Kind = KindZone
		return d
	}
	rec := found.Record
	b.rec = rec
	d.Kind, d.Record, d.Mode = KindRecord, rec.Name(), string(rec.Config.Mode)
	f, ok := answeredFamily(b.qtype, m)
	if !ok {
		return d
	}
	v := rec.View()
	d.Backends = answerTargets(m, b.qname)
	switch {
	case v.FallbackApplies(f):
		d.Fallback = string(rec.Config.Settings().Fallback.Mode)
	case v.Extra().Chains[f] != nil:
		var loc geo.Location
		b.geo.Lookup(b.client, &loc)
		d.Step = string(v.Extra().Chains[f].Decider(b.client, b.geo, &loc))
	}
	d.Degraded, d.Failover = v.Degraded[f], v.Failover[f]
	return d
}

// answeredFamily returns the address family a record's answer to qtype is of: A and CNAME
// (which a host-name backend or a fallback CNAME answers) IPv4, AAAA IPv6, ANY the family of
// its answer (RFC 8482: one RRset). Other types are not chosen by the mode.
func answeredFamily(qtype uint16, m *dns.Msg) (catalog.Family, bool) {
	switch qtype {
	case dns.TypeA, dns.TypeCNAME:
		return catalog.IPv4, true
	case dns.TypeAAAA:
		return catalog.IPv6, true
	case dns.TypeANY:
		for _, rr := range m.Answer {
			if rr.Header().Rrtype == dns.TypeAAAA {
				return catalog.IPv6, true
			}
		}
		return catalog.IPv4, true
	}
	return 0, false
}

// answerTargets returns the addresses and CNAME targets that m answers for owner.
func answerTargets(m *dns.Msg, owner string) []string {
	var out []string
	for _, rr := range m.Answer {
		if !strings.EqualFold(rr.Header().Name, owner) {
			continue
		}
		switch x := rr.(type) {
		case *dns.A:
			out = append(out, x.A.String())
		case *dns.AAAA:
			out = append(out, x.AAAA.String())
		case *dns.CNAME:
			out = append(out, x.Target)
		}
	}
	return out
}

// AppendJSON appends d as encoding/json writes it (the fields of the struct tags, in order,
// the empty ones left out), without reflection: the answer log writes one a response.
func (d *Decision) AppendJSON(b []byte) []byte {
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, d.Kind)
	for _, f := range [...]struct{ name, v string }{{"record", d.Record}, {"mode", d.Mode}, {"step", d.Step}} {
		if f.v != "" {
			b = appendJSONString(append(append(append(b, ",\""...), f.name...), "\":"...), f.v)
		}
	}
	if len(d.Backends) > 0 {
		b = append(b, `,"backends":[`...)
		for i, be := range d.Backends {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, be)
		}
		b = append(b, ']')
	}
	if d.Fallback != "" {
		b = appendJSONString(append(b, `,"fallback":`...), d.Fallback)
	}
	if d.Degraded {
		b = append(b, `,"degraded":true`...)
	}
	if d.Failover {
		b = append(b, `,"failover":true`...)
	}
	if d.Client != "" {
		b = appendJSONString(append(b, `,"client":`...), d.Client)
	}
	if d.Scope != nil {
		b = strconv.AppendInt(append(b, `,"scope":`...), int64(*d.Scope), 10)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, the rest as it is (the names and addresses of answers are ASCII).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
