package heartbeats

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// tsigFudge is the seconds of clock difference an update's signature tolerates (RFC 8945).
const tsigFudge = 300

// updater sends RFC 2136 updates signed with a TSIG key, over TCP, to a zone's servers in
// order until one answers.
type updater struct {
	key     *config.TSIGKey
	timeout time.Duration
}

// outcome is the result of an update, as the metrics count it: an rcode's name (NOERROR,
// REFUSED, NOTAUTH, ...), "timeout" or "network".
type outcome string

// send applies the update m (its zone section set) at the first of servers that answers, and
// returns the outcome; err is nil only for NOERROR.
func (u updater) send(ctx context.Context, servers []string, m *dns.Msg) (outcome, error) {
	var errs []error
	for _, server := range servers {
		res, err := u.sendTo(ctx, server, m)
		if res != "network" && res != "timeout" {
			return res, err // the server answered: its answer is final
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			return res, errors.Join(errs...)
		}
	}
	return "network", errors.Join(errs...)
}

// sendTo sends m to one server.
func (u updater) sendTo(ctx context.Context, server string, m *dns.Msg) (outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	signed := m.Copy()
	signed.SetTsig(u.key.Name, u.key.Algorithm, tsigFudge, time.Now().Unix())
	c := &dns.Client{Net: "tcp", TsigSecret: map[string]string{u.key.Name: u.key.Secret}}
	r, _, err := c.ExchangeContext(ctx, signed, server)
	switch {
	case r != nil && r.Rcode != dns.RcodeSuccess:
		return outcome(dns.RcodeToString[r.Rcode]), fmt.Errorf("update of %s at %s: %s%s", zoneOf(m), server, dns.RcodeToString[r.Rcode], tsigError(r))
	case err != nil:
		var ne net.Error
		if ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout() {
			return "timeout", fmt.Errorf("update of %s at %s: %w", zoneOf(m), server, err)
		}
		if r == nil {
			return "network", fmt.Errorf("update of %s at %s: %w", zoneOf(m), server, err)
		}
		return "tsig", fmt.Errorf("update of %s at %s: the answer's signature: %w", zoneOf(m), server, err)
	}
	return "NOERROR", nil
}

// tsigError names the TSIG error of an answer that has one (BADSIG, BADKEY, BADTIME).
func tsigError(r *dns.Msg) string {
	if t := r.IsTsig(); t != nil && t.Error != dns.RcodeSuccess {
		return " (TSIG " + dns.RcodeToString[int(t.Error)] + ")"
	}
	return ""
}

// zoneOf returns the zone an update is for.
func zoneOf(m *dns.Msg) string {
	if len(m.Question) == 1 {
		return m.Question[0].Name
	}
	return "?"
}

// replaceTXT returns the update of zone that replaces every TXT record of name by one with
// txt and TTL 0 (a heartbeat is never to be cached).
func replaceTXT(zone, name string, txt []string) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(zone)
	rr := &dns.TXT{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: txt}
	m.RemoveRRset([]dns.RR{rr})
	m.Insert([]dns.RR{rr})
	return m
}
