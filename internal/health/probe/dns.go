package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// dnsProbe asks a backend that is itself a DNS server one question and judges the answer's
// rcode and, optionally, its answer records. It holds no connection between probes, so it is
// safe for concurrent use.
//
// Parameters:
//
//	query_name         the name to ask for (required); made fully qualified
//	query_type         the record type, any name miekg/dns knows (default A)
//	port               the backend's DNS port (default 53; the backend's own port is its
//	                   service port, so it is not used)
//	protocol           udp (default) or tcp
//	expected_rcode     the rcode that counts as healthy, by name (default NOERROR)
//	expected_answer    a regular expression that must match the text of at least one answer
//	                   record as dig would print it (rr.String())
//	recursion_desired  set the RD bit (default false: ask the backend about its own data)
//
// A truncated UDP answer is judged as it is; use protocol tcp for large answers.
type dnsProbe struct {
	addr    string         // host:port of the backend's DNS service
	client  *dns.Client    // read-only after construction, so shared by concurrent probes
	name    string         // the question's name, fully qualified
	qtype   uint16         // the question's type
	rcode   int            // the healthy rcode
	answer  *regexp.Regexp // nil: any answer will do
	rd      bool           // the RD bit
	timeout time.Duration  // the check's timeout, for reasons and as a backstop
}

// newDNSProbe compiles a dns check for target t.
func newDNSProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	pr := &dnsProbe{timeout: timeout}

	pr.name = strings.TrimSpace(p.String("query_name", ""))
	switch {
	case pr.name == "":
		p.Errorf("query_name", "is required")
	default:
		pr.name = dns.Fqdn(pr.name)
		if _, ok := dns.IsDomainName(pr.name); !ok {
			p.Errorf("query_name", "%q is not a valid domain name", pr.name)
		}
	}

	qtype := p.String("query_type", "A")
	if v, ok := dns.StringToType[strings.ToUpper(strings.TrimSpace(qtype))]; ok && v != dns.TypeNone {
		pr.qtype = v
	} else {
		p.Errorf("query_type", "unknown record type %q", qtype)
	}

	rcode := p.String("expected_rcode", "NOERROR")
	if v, ok := dns.StringToRcode[strings.ToUpper(strings.TrimSpace(rcode))]; ok {
		pr.rcode = v
	} else {
		p.Errorf("expected_rcode", "unknown rcode %q (for example NOERROR, NXDOMAIN, REFUSED)", rcode)
	}

	pr.answer = p.Regexp("expected_answer")
	pr.rd = p.Bool("recursion_desired", false)

	port := p.Int("port", 53, 1, 65535)
	pr.addr = t.HostPort(port)

	proto := strings.ToLower(strings.TrimSpace(p.String("protocol", "udp")))
	if proto != "udp" && proto != "tcp" {
		p.Errorf("protocol", "must be udp or tcp, not %q", proto)
		proto = "udp"
	}
	// Timeout is a backstop for dial, write and read together; ExchangeContext uses the
	// context's deadline when it comes earlier, as it does under the scheduler.
	pr.client = &dns.Client{Net: proto, Timeout: timeout}
	return pr, nil
}

// Probe sends the question and judges the reply.
func (pr *dnsProbe) Probe(ctx context.Context) Result {
	start := time.Now()
	m := new(dns.Msg)
	m.SetQuestion(pr.name, pr.qtype)
	m.RecursionDesired = pr.rd

	r, _, err := pr.client.ExchangeContext(ctx, m, pr.addr)
	if err != nil {
		if ctxOrNetTimeout(ctx, err) {
			return budgetFail(ctx, start, pr.timeout)
		}
		return Fail("dns %s", terseNetError(err))
	}
	got := dns.RcodeToString[r.Rcode]
	if got == "" {
		got = fmt.Sprintf("RCODE%d", r.Rcode)
	}
	if r.Rcode != pr.rcode {
		if pr.rcode == dns.RcodeSuccess {
			return Fail("dns rcode %s", got)
		}
		return Fail("dns rcode %s, expected %s", got, dns.RcodeToString[pr.rcode])
	}
	if pr.answer != nil {
		for _, rr := range r.Answer {
			if pr.answer.MatchString(rr.String()) {
				return Pass(fmt.Sprintf("dns %s, answer matches", got))
			}
		}
		if len(r.Answer) == 0 {
			return Fail("dns answer does not match %q (no answer records)", pr.answer.String())
		}
		return Fail("dns answer does not match %q", pr.answer.String())
	}
	return Pass(fmt.Sprintf("dns %s, %d answer records", got, len(r.Answer)))
}

// ctxOrNetTimeout reports whether err comes from an expired deadline (the context's or a socket's).
func ctxOrNetTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// budgetFail is the result of a probe that ran out of time: "timeout after 2s" (or "canceled
// after 120ms" when ctx was canceled rather than expired).
func budgetFail(ctx context.Context, start time.Time, timeout time.Duration) Result {
	if errors.Is(ctx.Err(), context.Canceled) {
		return Fail("canceled after %s", time.Since(start).Round(time.Millisecond))
	}
	return Fail("timeout after %s", probeBudget(ctx, start, timeout))
}

// probeBudget is the time a probe that began at start had, as a timeout reason names it: the
// check's timeout, or what was left of it up to ctx's deadline when that was noticeably
// shorter (see namedBudget).
func probeBudget(ctx context.Context, start time.Time, timeout time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok && (timeout <= 0 || dl.Before(start.Add(timeout))) {
		return namedBudget(dl.Sub(start), timeout)
	}
	return timeout
}

// terseNetError shortens a network error for a log line: "read: connection refused" rather
// than "read udp 127.0.0.1:40000->127.0.0.1:53: recvfrom: connection refused".
func terseNetError(err error) string {
	var op *net.OpError
	if !errors.As(err, &op) {
		return err.Error()
	}
	var errno syscall.Errno
	if errors.As(op.Err, &errno) {
		return op.Op + ": " + errno.Error()
	}
	return op.Op + ": " + op.Err.Error()
}
