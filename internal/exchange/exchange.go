// Package exchange is Meridian's DNS client for the exchanges it makes outside the query path:
// the sites source asking its peers, the heartbeats source reading and writing the operator's
// DNS, the delegation keepers. One query per call, UDP with a retry over TCP on truncation,
// TSIG on request, errors sorted into kinds for the metrics.
package exchange

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// udpSize is the EDNS0 UDP payload size the queries advertise (the DNS flag day 2020 value,
// which fits an unfragmented packet on every common path).
const udpSize = 1232

// readBuffers hold UDP answers while they are parsed and verified: dns.MaxMsgSize bytes each.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, dns.MaxMsgSize); return &b }}

// headerSize is the size of a DNS message header: a shorter datagram is no answer.
const headerSize = 12

// tsigFudge is the seconds of clock difference a signature tolerates (RFC 8945's advice).
const tsigFudge = 300

// Client asks peers, one exchange per call, safe for concurrent use. It keeps the UDP sockets
// of exchanges that succeeded, up to IdlePerServer for each server, for the next ones: a
// round of thousands of queries then costs two system calls a query rather than six. Close
// closes them.
type Client struct {
	// Timeout bounds one exchange: the UDP query and any TCP retry together. Zero means
	// config.DefaultPeerTimeout.
	Timeout time.Duration
	// Key signs the queries and must have signed the answers; nil: unsigned.
	Key *config.TSIGKey

	mu     sync.Mutex
	idle   map[string][]net.Conn // by server
	closed bool
}

// IdlePerServer bounds the UDP sockets a Client keeps for one server: callers that keep more
// exchanges than that in flight to one server (the sites source's rounds do not) reopen the
// rest.
const IdlePerServer = 16

// dialUDP returns a UDP socket connected to server: a kept one, or a new one.
func (c *Client) dialUDP(ctx context.Context, server string) (net.Conn, error) {
	c.mu.Lock()
	if n := len(c.idle[server]); n > 0 {
		nc := c.idle[server][n-1]
		c.idle[server] = c.idle[server][:n-1]
		c.mu.Unlock()
		return nc, nil
	}
	c.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, "udp", server)
}

// keepUDP keeps nc, a socket whose last exchange succeeded, for the next exchange with
// server, or closes it when enough are kept or the client is closed.
func (c *Client) keepUDP(server string, nc net.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle[server]) >= IdlePerServer {
		nc.Close()
		return
	}
	if c.idle == nil {
		c.idle = map[string][]net.Conn{}
	}
	c.idle[server] = append(c.idle[server], nc)
}

// Close closes the kept sockets; exchanges still running close theirs when they end.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, conns := range c.idle {
		for _, nc := range conns {
			nc.Close()
		}
	}
	c.idle = nil
}

// ErrorKind says what went wrong in an exchange.
type ErrorKind string

// The kinds of Error.
const (
	// KindTimeout: no answer within the Timeout or the context's deadline, or the context
	// was cancelled first (Err is then the context's error).
	KindTimeout ErrorKind = "timeout"
	// KindNetwork: the query could not be sent or the answer not read (e.g. ICMP port
	// unreachable, a TCP connection refused or cut).
	KindNetwork ErrorKind = "network"
	// KindTSIG: a key is set and the answer is unsigned, badly signed, or reports a TSIG
	// error (the peer did not accept our signature).
	KindTSIG ErrorKind = "tsig"
	// KindRefused: the answer's rcode is REFUSED.
	KindRefused ErrorKind = "refused"
	// KindServfail: the answer's rcode is SERVFAIL.
	KindServfail ErrorKind = "servfail"
	// KindRcode: any other error rcode (Err names it).
	KindRcode ErrorKind = "rcode"
	// KindMalformed: the answer cannot be parsed or does not answer the question (not a
	// response, another ID, another question).
	KindMalformed ErrorKind = "malformed"
)

// Error is a failed exchange: its kind, what was asked of whom, and the cause.
type Error struct {
	Kind   ErrorKind
	Server string
	Name   string
	Qtype  uint16
	Err    error
}

// Error says what was asked of whom and why it failed.
func (e *Error) Error() string {
	return fmt.Sprintf("ask %s for %s %s: %s: %v", e.Server, e.Name, dns.Type(e.Qtype), e.Kind, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err: "" for nil, KindNetwork for an error that is not an
// *Error.
func KindOf(err error) ErrorKind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindNetwork
}

// Exchange asks server (host:port) for name and qtype with RD=0 (peers are authoritative):
// over UDP with EDNS0, again over TCP when the UDP answer is truncated, signed with Key when
// set and then the answer's signature verified. It returns the reply when its rcode is
// NOERROR or NXDOMAIN; anything else is an *Error.
func (c *Client) Exchange(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	return c.ExchangeRD(ctx, server, name, qtype, false)
}

// ExchangeRD is Exchange with the RD bit chosen: set only to ask a recursive resolver.
func (c *Client) ExchangeRD(ctx context.Context, server, name string, qtype uint16, rd bool) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.RecursionDesired = rd
	q.SetEdns0(udpSize, false)
	return c.ExchangeMsg(ctx, server, q)
}

// ExchangeMsg is Exchange of the query q, one question with an OPT record (which may carry
// options, such as a client subnet), as given.
func (c *Client) ExchangeMsg(ctx context.Context, server string, q *dns.Msg) (*dns.Msg, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = config.DefaultPeerTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(kind ErrorKind, err error) (*dns.Msg, error) {
		return nil, &Error{Kind: kind, Server: server, Name: q.Question[0].Name, Qtype: q.Question[0].Qtype, Err: err}
	}

	r, kind, err := c.roundTrip(ctx, "udp", server, q)
	if err == nil && r.Truncated {
		r, kind, err = c.roundTrip(ctx, "tcp", server, q)
	}
	if err != nil {
		return fail(kind, err)
	}
	switch r.Rcode {
	case dns.RcodeSuccess, dns.RcodeNameError:
		return r, nil
	case dns.RcodeRefused:
		return fail(KindRefused, errors.New("REFUSED"))
	case dns.RcodeServerFailure:
		return fail(KindServfail, errors.New("SERVFAIL"))
	default:
		return fail(KindRcode, fmt.Errorf("rcode %s", dns.RcodeToString[r.Rcode]))
	}
}

// roundTrip sends q to server over network and reads the reply to it, checking that it
// answers q and, with a key, its signature. A truncated UDP reply is returned without its
// signature checked: the TCP retry's is. On failure it returns the kind and the cause.
func (c *Client) roundTrip(ctx context.Context, network, server string, q *dns.Msg) (*dns.Msg, ErrorKind, error) {
	var nc net.Conn
	var err error
	if network == "udp" {
		nc, err = c.dialUDP(ctx, server)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, network, server)
	}
	if err != nil {
		return nil, netKind(ctx, err), ctxErr(ctx, err)
	}
	co := &dns.Conn{Conn: nc}
	r, kind, err := c.converse(ctx, co, network, q)
	if err == nil && network == "udp" {
		c.keepUDP(server, nc)
	} else {
		nc.Close()
	}
	return r, kind, err
}

// converse sends q on co and reads the reply to it (see roundTrip).
func (c *Client) converse(ctx context.Context, co *dns.Conn, network string, q *dns.Msg) (*dns.Msg, ErrorKind, error) {
	deadline, _ := ctx.Deadline() // exchange always sets one
	co.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { co.SetDeadline(time.Now()) })
	defer stop()
	var err error

	var wire []byte
	var mac string // the query's signature, which the answer's covers
	if c.Key != nil {
		signed := q.Copy() // signing takes the TSIG record out of the message
		signed.SetTsig(c.Key.Name, c.Key.Algorithm, tsigFudge, time.Now().Unix())
		if wire, mac, err = dns.TsigGenerate(signed, c.Key.Secret, "", false); err != nil {
			return nil, KindTSIG, fmt.Errorf("sign the query: %w", err)
		}
	} else if wire, err = q.Pack(); err != nil {
		return nil, KindMalformed, fmt.Errorf("pack the query: %w", err)
	}
	if _, err := co.Write(wire); err != nil {
		return nil, netKind(ctx, err), ctxErr(ctx, err)
	}

	var p []byte
	if network == "udp" {
		buf := readBuffers.Get().(*[]byte)
		defer readBuffers.Put(buf)
		p, err = readDatagram(co.Conn, *buf, q.Id)
	} else {
		p, err = co.ReadMsgHeader(nil)
	}
	switch {
	case errors.Is(err, dns.ErrShortRead):
		return nil, KindMalformed, err
	case err != nil:
		return nil, netKind(ctx, err), ctxErr(ctx, err)
	}
	r := new(dns.Msg)
	if err := r.Unpack(p); err != nil {
		return nil, KindMalformed, fmt.Errorf("unpack the answer: %w", err)
	}
	if err := answers(r, q); err != nil {
		return nil, KindMalformed, err
	}
	if c.Key == nil || (r.Truncated && network == "udp") {
		return r, "", nil
	}
	t := r.IsTsig()
	switch {
	case t == nil:
		return nil, KindTSIG, errors.New("the answer is not signed")
	case t.Error != dns.RcodeSuccess:
		return nil, KindTSIG, fmt.Errorf("the server reports TSIG error %s", dns.RcodeToString[int(t.Error)])
	case !strings.EqualFold(t.Hdr.Name, c.Key.Name) || !strings.EqualFold(t.Algorithm, c.Key.Algorithm):
		return nil, KindTSIG, fmt.Errorf("the answer is signed with key %s %s, not %s %s", t.Hdr.Name, t.Algorithm, c.Key.Name, c.Key.Algorithm)
	}
	if err := dns.TsigVerify(p, c.Key.Secret, mac, false); err != nil {
		return nil, KindTSIG, fmt.Errorf("verify the answer's signature: %w", err)
	}
	return r, "", nil
}

// readDatagram reads from nc, into buf, the first datagram with the query's id: a socket kept
// from an earlier exchange may still receive a late answer to it, which is not this one's (nor
// is a spoofed one with another id), and is skipped. buf is big enough for an answer larger
// than advertised; it is pooled because a peer round reads thousands.
func readDatagram(nc net.Conn, buf []byte, id uint16) ([]byte, error) {
	for {
		n, err := nc.Read(buf)
		switch {
		case err != nil:
			return nil, err
		case n < headerSize:
			return nil, dns.ErrShortRead
		case binary.BigEndian.Uint16(buf) == id:
			return buf[:n], nil
		}
	}
}

// answers reports why r is not the reply to q, nil when it is. An error reply (rcode other
// than NOERROR and NXDOMAIN) may leave the question out, as some servers' FORMERR do.
func answers(r, q *dns.Msg) error {
	switch {
	case !r.Response:
		return errors.New("the answer is not a response (QR=0)")
	case r.Id != q.Id:
		return fmt.Errorf("the answer's ID %d is not the query's %d", r.Id, q.Id)
	case len(r.Question) == 0 && r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError:
		return nil
	case len(r.Question) != 1:
		return fmt.Errorf("the answer has %d questions, not the query's one", len(r.Question))
	}
	got, want := r.Question[0], q.Question[0]
	if !strings.EqualFold(got.Name, want.Name) || got.Qtype != want.Qtype || got.Qclass != want.Qclass {
		return fmt.Errorf("the answer is for %s, not %s", got.String(), want.String())
	}
	return nil
}

// netKind classifies a failure to send or read: a timeout (the deadline passed, or ctx
// ended) or another network error.
func netKind(ctx context.Context, err error) ErrorKind {
	var ne net.Error
	if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return KindTimeout
	}
	return KindNetwork
}

// ctxErr returns ctx's error, which says why an exchange was cut short, when ctx has ended,
// err otherwise (a deadline that passes and the context's timeout race: both mean time ran
// out, and the context says so more plainly).
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}
