// Package answer builds the authoritative DNS response for a query against a catalog snapshot:
// A/AAAA from the record's selection mode or fallback policy, CNAME for host-name backends,
// SRV, HTTPS/SVCB and TXT, NODATA and NXDOMAIN with the zone's SOA, a minimal ANY answer
// (RFC 8482), EDNS Client Subnet (RFC 7871), truncation of UDP answers that do not fit, and
// REFUSED for zone transfers (AXFR, IXFR).
package answer

import (
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/rrl"
)

// Options are the per-block switches that change answers.
type Options struct {
	// UseECS makes the EDNS Client Subnet address the client of the query and echoes the option.
	UseECS bool
	// EnableTXT answers TXT queries of record names with one line per backend.
	EnableTXT bool
	// Count counts address answers in the record's and the backends' query counts and times
	// their selection (catalog.Record.CountAnswer), for CoreDNS-GSLB's metrics and the
	// traffic shares.
	Count bool
	// Traffic also weighs each counted answer's backends by the answer's TTL, by client
	// country where the selection looked it up (traffic_shares; with Count).
	Traffic bool
	// PeerKey is set when the peers' exchanges are signed (peer_tsig): the names a site
	// publishes for its peers are answered to signed queries only (Query.Signed).
	PeerKey bool
	// Cookies answers DNS cookies with these secrets; nil when cookies are off.
	Cookies *cookie.Jar
	// RequireCookie answers BADCOOKIE to a UDP query that has a client cookie and no valid
	// server cookie.
	RequireCookie bool
	// Limit limits the rate of UDP responses; nil when rate limiting is off.
	Limit *rrl.Limiter
	// PluginSigns is set when a plugin before gslb signs its answers (CoreDNS's dnssec): the
	// fast path leaves the queries with the DO bit, and DNSKEY's, to CoreDNS's path, where it
	// runs.
	PluginSigns bool
	// Fallthrough are the zones of the fallthrough option (lower case, fully qualified; "."
	// for every name): NXDOMAIN for a name at or below one goes to the next plugin. Only the
	// fast path reads it; the plugin passes Respond's NameError on itself.
	Fallthrough []string
	// Exclude are zones (lower case, fully qualified) whose names the fast path leaves to
	// CoreDNS's server: those of the other server blocks of the address that lie within the
	// gslb block's, which the server routes to them.
	Exclude []string
}

// Result tells the caller what to do with the response.
type Result int

// The results of Respond.
const (
	// Answered: write the response.
	Answered Result = iota
	// NotOurs: the name is in no served zone (or the query is not one we answer); pass it on.
	NotOurs
	// NameError: the response is NXDOMAIN; the caller may pass the query on instead (fallthrough).
	NameError
	// Dropped: rate limiting dropped the response (the message is nil): write nothing.
	Dropped
)

// Query is one question to answer.
type Query struct {
	Msg *dns.Msg
	// Source is the transport address of the client.
	Source netip.Addr
	// TCP is set for queries over a stream transport; their answers are never truncated.
	TCP bool
	// Geo are the GeoIP sources that the geoip and geoip_affinity modes read; nil when none
	// are configured (the geo modes then select like failover).
	Geo *geo.Sources
	// Signed is set when the query carries a TSIG signature that the server verified with
	// the peer key. The caller signs the response.
	Signed bool
	// Now is when the query came, for cookies and rate limiting; the zero time for now.
	Now time.Time
}

// Respond answers q from snap and, with opts.Count, counts the answer in the record's and the
// backends' query counts (catalog.Record.CountAnswer).
func Respond(snap *catalog.Snapshot, opts Options, q Query) (*dns.Msg, Result) {
	return respond(snap, &opts, &q, opts.Count, false)
}

// respond is Respond; count is false for answers that no client asked for (Explain), and
// explaining is set for them: they are not the first answer of a change (catalog.AnswerWatch).
// opts and q are Respond's, by reference: they are not copied again down the path.
func respond(snap *catalog.Snapshot, opts *Options, q *Query, count, explaining bool) (*dns.Msg, Result) {
	req := q.Msg
	if req.Response || (req.Opcode != dns.OpcodeQuery && req.Opcode != dns.OpcodeNotify) || len(req.Question) != 1 {
		return nil, NotOurs
	}
	question := req.Question[0]
	if question.Qclass != dns.ClassINET && question.Qclass != dns.ClassANY {
		return nil, NotOurs
	}
	qname := strings.ToLower(question.Name)
	zone := snap.Zone(qname)
	if zone == nil {
		return nil, NotOurs
	}
	if req.Opcode == dns.OpcodeNotify {
		// A gslb zone is its own primary: a NOTIFY for it says nothing it would act on
		// (RFC 1996 lets a server that does not take them answer NOTIMP), and is no error.
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeNotImplemented)
		return m, Answered
	}

	var b builder // set field by field: a composite literal is built aside and copied
	b.client, b.geo, b.count, b.traffic, b.explaining = q.Source, q.Geo, count, opts.Traffic, explaining
	b.req, b.zone, b.qname, b.qtype, b.source = req, zone, qname, question.Qtype, q.Source
	m, result := b.respond(snap, opts, q)
	if opts.Limit != nil && !q.TCP && m != nil {
		if m = b.limit(opts.Limit, m); m == nil {
			return nil, Dropped
		}
	}
	return m, result
}

// respond builds the response to q into b.
func (b *builder) respond(snap *catalog.Snapshot, opts *Options, q *Query) (*dns.Msg, Result) {
	if opts.Cookies != nil || opts.Limit != nil {
		b.now = q.Now
		if b.now.IsZero() {
			b.now = time.Now()
		}
	}
	if opts.Cookies != nil {
		b.secrets = opts.Cookies.Secrets()
	}
	if rcode := b.readEDNS(opts.UseECS); rcode != dns.RcodeSuccess {
		return b.finishError(rcode), Answered
	}
	if opts.RequireCookie && !q.TCP && b.cookie.status == cookie.ClientOnly {
		return b.finishError(dns.RcodeBadCookie), Answered
	}
	if b.opt != nil && b.zone.Signer() != nil {
		b.signing = b.opt.Do()
		b.co = b.signing && b.opt.Hdr.Ttl&ednsCO != 0 // RFC 9824: CO means nothing without DO
	}
	if b.qtype == dns.TypeAXFR || b.qtype == dns.TypeIXFR {
		// Answers are computed per query from health and the client; there is no zone to
		// transfer, and a lone SOA would leave the client waiting for the rest.
		return b.finishError(dns.RcodeRefused), Answered
	}
	if b.published(snap, opts, q.Signed) {
		if q.Signed {
			b.reserve = tsigReserve
		}
		if b.msg.Rcode == dns.RcodeRefused {
			return b.msg, Answered
		}
		if b.signing && !b.sign() {
			return b.finishError(dns.RcodeServerFailure), Answered
		}
		return b.finish(q.TCP), Answered
	}
	result := b.answer(opts)
	if b.signing && !b.sign() {
		return b.finishError(dns.RcodeServerFailure), Answered
	}
	return b.finish(q.TCP), result
}

// builder carries one response under construction. Its chooser (the record, once found, and
// the client) is what a selection reads and counts.
type builder struct {
	chooser
	req   *dns.Msg
	zone  *catalog.Zone
	qname string
	qtype uint16

	owner string // the name answers carry: the record's, or the query's for a wildcard

	opt *dns.OPT // the request's OPT record, or nil
	ecs *dns.EDNS0_SUBNET
	// scope is the EDNS Client Subnet scope of the answer (see selection.scope).
	scope int
	// reserve is room the caller adds to the response after it (its TSIG signature), which
	// UDP answers leave free.
	reserve int
	// source is the query's transport address, which cookies and rate limiting are about
	// (client may be the ECS address); now is when it came, with cookies or rate limiting.
	source netip.Addr
	now    time.Time
	// secrets are the cookie secrets (nil when cookies are off) and cookie what the query's
	// COOKIE option said.
	secrets *cookie.Secrets
	cookie  cookieState
	// cut is the delegation point of a referral.
	cut string
	// signing is set for a query with the DO bit in a signed zone: the response carries the
	// signatures (sign.go); co when the query sets the Compact Answers OK flag.
	signing, co bool
	// found is what the query's name holds, once looked up.
	found catalog.Found

	msg *dns.Msg
}

func (b *builder) reply(rcode int) {
	m := new(dns.Msg)
	m.SetRcode(b.req, rcode)
	m.Authoritative = true
	m.RecursionAvailable = false
	b.msg = m
}

// answer fills in b.msg for the query.
func (b *builder) answer(opts *Options) Result {
	found := b.zone.Find(b.qname)
	b.found = found
	if found.Cut != nil && (b.qname != found.Cut.Name || b.qtype != dns.TypeDS) {
		b.referral(found.Cut)
		return Answered
	}
	if !found.Exists {
		b.reply(dns.RcodeNameError)
		b.msg.Ns = []dns.RR{b.zone.NegativeSOARecord()}
		return NameError
	}
	b.reply(dns.RcodeSuccess)
	rec, wildcard := found.Record, found.Wildcard
	apex := b.qname == b.zone.Origin
	switch {
	case apex && b.qtype == dns.TypeSOA:
		b.msg.Answer = []dns.RR{b.zone.SOARecord()}
		return Answered
	case apex && b.qtype == dns.TypeNS:
		b.msg.Answer = make([]dns.RR, len(b.zone.NS))
		for i, ns := range b.zone.NS {
			b.msg.Answer[i] = copyRR(ns, "")
		}
		return Answered
	case !wildcard && b.keyAnswer(apex):
		return Answered
	case b.static(found.Static, rec != nil):
		return Answered
	case rec == nil && apex && b.qtype == dns.TypeANY:
		b.msg.Answer = []dns.RR{b.zone.SOARecord()}
		return Answered
	case rec == nil:
		b.nodata()
		return Answered
	}
	rec.MarkQueried()
	b.rec, b.owner = rec, rec.Name()
	if wildcard {
		b.owner = b.qname
	}
	switch b.qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME:
		b.address(b.qtype)
	case dns.TypeANY:
		b.any()
	case dns.TypeSRV:
		b.srv()
	case dns.TypeHTTPS, dns.TypeSVCB:
		b.svcb()
	case dns.TypeTXT:
		if opts.EnableTXT {
			b.txt()
		}
	}
	if len(b.msg.Answer) == 0 && b.msg.Rcode == dns.RcodeSuccess {
		b.nodata()
	}
	return Answered
}

// nodata turns the response into NODATA: NOERROR, no answer, the SOA in authority.
func (b *builder) nodata() {
	b.msg.Answer = nil
	b.msg.Extra = nil
	b.msg.Ns = []dns.RR{b.zone.NegativeSOARecord()}
}

// copyRR returns a shallow copy of a prebuilt record, renamed to owner when owner is not empty.
// Responses never share records with the catalog, so plugins after gslb may change them.
func copyRR(rr dns.RR, owner string) dns.RR {
	var c dns.RR
	switch x := rr.(type) {
	case *dns.A:
		y := *x
		c = &y
	case *dns.AAAA:
		y := *x
		c = &y
	case *dns.CNAME:
		y := *x
		c = &y
	case *dns.SOA:
		y := *x
		c = &y
	case *dns.NS:
		y := *x
		c = &y
	default:
		c = dns.Copy(rr)
	}
	if owner != "" {
		c.Header().Name = owner
	}
	return c
}
