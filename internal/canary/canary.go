// Package canary asks recursive resolvers that Meridian does not control (and the zones'
// parent servers) what they answer for chosen names, from each instance, and compares it with
// what the instance itself answers: whether a resolver serves an address the instance no
// longer answers, serves the answer longer than the record's TTL (a TTL floor), honours the
// EDNS Client Subnet scope, and whether the parent's delegation and glue are what the zone
// says. Mismatches are metrics, the API's and dashboard's rows, and webhooks.
//
// The Runner is a component of its block (a publisher), built from the constructor table;
// what the instance answers comes from its engine (Expect), never from the query path.
package canary

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// The kinds of mismatch.
const (
	// KindAnswer: the resolver answers an address this instance does not, or another rcode,
	// or for an ECS subnet another address than this instance answers that subnet.
	KindAnswer = "answer"
	// KindTTL: the resolver serves the answer with a TTL above the record's (a TTL floor).
	KindTTL = "ttl"
	// KindECS: the resolver does not honour the EDNS Client Subnet scope of an answer that
	// depends on the client.
	KindECS = "ecs"
	// KindDelegation: the parent's NS records or glue differ from the zone's.
	KindDelegation = "delegation"
	// KindError: the resolver or the parent could not be asked.
	KindError = "error"
)

// Expected is what this instance answers a query.
type Expected struct {
	// Rcode is the answer's rcode (NOERROR, NXDOMAIN).
	Rcode string `json:"rcode"`
	// Answer are the addresses it answers; Candidates every address it may answer now (the
	// record's healthy backends of the family, or its fallback answer), a superset.
	Answer     []string `json:"answer"`
	Candidates []string `json:"candidates"`
	// Scope is the ECS scope of its reply (-1: the query had no ECS); TTL the record's TTL,
	// the most it answers with.
	Scope int    `json:"scope"`
	TTL   uint32 `json:"ttl"`
}

// Expect returns what this instance answers name/qtype for a client at client, or behind the
// subnet ecs (the zero Prefix for none).
type Expect func(name string, qtype uint16, client netip.Addr, ecs netip.Prefix) (Expected, error)

// Mismatch is one difference a canary found.
type Mismatch struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Check is one question asked of one resolver, and what came of it.
type Check struct {
	Resolver string    `json:"resolver"`
	Name     string    `json:"name"`
	Type     string    `json:"type"`
	ECS      string    `json:"ecs,omitempty"`
	Time     time.Time `json:"time"`
	// Rcode, Answer, TTL and Scope are the resolver's reply: its rcode, addresses, lowest
	// TTL, and ECS scope (-1: its reply has no client subnet).
	Rcode      string     `json:"rcode"`
	Answer     []string   `json:"answer"`
	TTL        uint32     `json:"ttl"`
	Scope      int        `json:"scope"`
	Expected   Expected   `json:"expected"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
}

// compare fills c's mismatches: its reply against what this instance answers.
func (c *Check) compare() {
	e := c.Expected
	add := func(kind, format string, args ...any) {
		c.Mismatches = append(c.Mismatches, Mismatch{Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
	if c.Rcode != e.Rcode {
		add(KindAnswer, "answers %s, this instance %s", c.Rcode, e.Rcode)
		return
	}
	var stale []string
	for _, a := range c.Answer {
		if !slices.Contains(e.Candidates, a) {
			stale = append(stale, a)
		}
	}
	if len(stale) > 0 {
		add(KindAnswer, "serves %s, which this instance does not answer now (it answers %s)", strings.Join(stale, " "), strings.Join(e.Candidates, " "))
	}
	if c.ECS != "" && e.Scope > 0 {
		switch {
		case c.Scope < 0:
			add(KindECS, "its reply to ECS %s carries no client subnet: it does not honour ECS (this instance answers with scope /%d)", c.ECS, e.Scope)
		case c.Scope < e.Scope:
			add(KindECS, "its reply to ECS %s has scope /%d, this instance's /%d: it serves the answer to clients it is not for", c.ECS, c.Scope, e.Scope)
		}
		if len(stale) == 0 && !sameSet(c.Answer, e.Answer) {
			add(KindAnswer, "for ECS %s serves %s, this instance answers %s", c.ECS, strings.Join(c.Answer, " "), strings.Join(e.Answer, " "))
		}
	}
	if len(c.Answer) > 0 && c.TTL > e.TTL {
		add(KindTTL, "serves TTL %d, above the record's %d: a TTL floor keeps clients on an answer that long", c.TTL, e.TTL)
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// Delegation is one parent server's delegation of one zone, against the zone's own.
type Delegation struct {
	Parent string    `json:"parent"`
	Zone   string    `json:"zone"`
	Time   time.Time `json:"time"`
	// NS and Glue are what the parent gives: the name servers, and the addresses of those
	// inside the zone. ExpectedNS and ExpectedGlue are the zone's NS records, and what this
	// instance answers for those inside it.
	NS           []string            `json:"ns"`
	Glue         map[string][]string `json:"glue,omitempty"`
	ExpectedNS   []string            `json:"expected_ns"`
	ExpectedGlue map[string][]string `json:"expected_glue,omitempty"`
	Mismatches   []Mismatch          `json:"mismatches,omitempty"`
}

// compare fills d's mismatches.
func (d *Delegation) compare() {
	add := func(format string, args ...any) {
		d.Mismatches = append(d.Mismatches, Mismatch{Kind: KindDelegation, Text: fmt.Sprintf(format, args...)})
	}
	if !sameSet(d.NS, d.ExpectedNS) {
		add("the parent delegates %s to %s, the zone names %s", d.Zone, strings.Join(d.NS, " "), strings.Join(d.ExpectedNS, " "))
	}
	for ns, want := range d.ExpectedGlue {
		if got, ok := d.Glue[ns]; ok && !sameSet(got, want) {
			add("the parent's glue of %s is %s, the zone answers %s", ns, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
	for ns, got := range d.Glue {
		if _, ok := d.ExpectedGlue[ns]; !ok && slices.Contains(d.NS, ns) && !slices.Contains(d.ExpectedNS, ns) {
			add("the parent gives glue %s for %s, a name server the zone does not name", strings.Join(got, " "), ns)
		}
	}
}

// addresses returns the A and AAAA addresses of rrs and their lowest TTL.
func addresses(rrs []dns.RR, qtype uint16) ([]string, uint32) {
	var out []string
	var ttl uint32
	for _, rr := range rrs {
		var a string
		switch v := rr.(type) {
		case *dns.A:
			if qtype == dns.TypeA {
				a = v.A.String()
			}
		case *dns.AAAA:
			if qtype == dns.TypeAAAA {
				a = v.AAAA.String()
			}
		}
		if a == "" {
			continue
		}
		if len(out) == 0 || rr.Header().Ttl < ttl {
			ttl = rr.Header().Ttl
		}
		out = append(out, a)
	}
	return out, ttl
}
