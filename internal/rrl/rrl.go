// Package rrl limits the rate of UDP responses per client network, in the spirit of BIND's and
// Knot's response rate limiting: each kind of response (an answer, NODATA, NXDOMAIN, a
// referral, an error) has a rate per second for each client network (/24 for IPv4, /56 for
// IPv6) and name, with a debt that lasts a window, so that a flood that reflects Meridian's
// responses to a spoofed victim gets no more than the rate, while other clients are answered in
// full. A response over the limit is dropped, or slips: it is sent truncated (TC=1, so that a
// real resolver retries over TCP, which cannot be spoofed) one time in `slip`.
//
// The accounts are a fixed table of 64-bit slots, four to a set, updated with compare-and-swap:
// no lock, no allocation, and a memory bound of 8 bytes a slot, fixed when the table is made. A
// key that finds its set full takes the slot idle longest; an evicted key starts again with a
// full account, which lets a flood that spreads over more keys than the table holds through at
// the rate of each key, never more.
package rrl

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Kind is the kind of a response, which has its own rate and its own accounts.
type Kind uint8

// The kinds of responses.
const (
	// Positive is an answer (NOERROR with records in the answer section): its accounts are by
	// query name and type.
	Positive Kind = iota
	// NoData is NOERROR without an answer: its accounts are by zone.
	NoData
	// NXDomain is a name error: its accounts are by zone, so that random names of one zone
	// (a random-subdomain flood) share one.
	NXDomain
	// Referral is a delegation to another server: its accounts are by delegation point.
	Referral
	// Error is any other rcode (REFUSED, FORMERR, SERVFAIL, ...): its accounts are by client
	// network alone.
	Error
	numKinds
)

// kindNames name the kinds in options, metrics and logs.
var kindNames = [numKinds]string{"positive", "nodata", "nxdomain", "referral", "error"}

// String returns the kind's name.
func (k Kind) String() string { return kindNames[k] }

// Decision is what to do with a response.
type Decision uint8

// The decisions.
const (
	// Allow: send the response.
	Allow Decision = iota
	// Drop: send nothing.
	Drop
	// Slip: send a truncated response in its place (TC=1, no records), or BADCOOKIE to a
	// client that sent a cookie.
	Slip
)

// Config is a limiter's settings: the rates, and how it keeps its accounts.
type Config struct {
	// Rates are the responses per second each account allows, by kind; 0 for no limit.
	Rates [numKinds]int
	config.RRLAccounts
}

// MaxDebt bounds rate × window (seconds): an account's balance is 20 bits wide.
const MaxDebt = 1<<19 - 1

// DefaultConfig returns the defaults of the rrl options: 20 responses a second of each kind
// (config.DefaultRRLResponsesPerSecond) and config.DefaultRRLAccounts.
func DefaultConfig() Config {
	c := Config{RRLAccounts: config.DefaultRRLAccounts()}
	for k := range c.Rates {
		c.Rates[k] = config.DefaultRRLResponsesPerSecond
	}
	return c
}

// Check reports the first problem of c.
func (c Config) Check() error {
	for k, r := range c.Rates {
		if r < 0 || int64(r)*int64(c.Window/time.Second) > MaxDebt {
			return fmt.Errorf("the %s rate %d times the window %s is more than %d responses", Kind(k), r, c.Window, MaxDebt)
		}
	}
	switch {
	case c.Window < time.Second:
		return fmt.Errorf("window %s is shorter than a second", c.Window)
	case c.Slip < 0 || c.Slip > 10:
		return fmt.Errorf("slip %d is not from 0 to 10", c.Slip)
	case c.IPv4Prefix < 1 || c.IPv4Prefix > 32:
		return fmt.Errorf("IPv4 prefix /%d is not from 1 to 32", c.IPv4Prefix)
	case c.IPv6Prefix < 1 || c.IPv6Prefix > 64:
		return fmt.Errorf("IPv6 prefix /%d is not from 1 to 64", c.IPv6Prefix)
	case c.TableSize < 0 || c.TableSize > 1<<28:
		return fmt.Errorf("table size %d is not from 0 to 2^28", c.TableSize)
	}
	return nil
}

// Query is a response to decide on.
type Query struct {
	// Client is the transport address the response goes to.
	Client netip.Addr
	Kind   Kind
	// Name is what the account is kept by, in lower case: the query name of an answer, the
	// zone of NODATA and NXDOMAIN, the delegation point of a referral; unused for errors.
	Name  string
	Qtype uint16
}

// Limiter keeps the accounts of one set of settings.
type Limiter struct {
	cfg    Config
	slots  []atomic.Uint64
	mask   uint64 // of the set index: len(slots)/setSize - 1
	seed   maphash.Seed
	epoch  time.Time
	window uint64 // in seconds
	v4, v6 [2]uint64
	exempt exemptSet
	log    func(Event)
	// logged is the second and the count of the events logged in it, so that a flood of new
	// limited accounts logs at most maxLogs lines a second.
	logged atomic.Uint64
}

// Event is an account that became limited: logged once each time it does.
type Event struct {
	Network netip.Prefix
	Kind    Kind
	Name    string
	Qtype   uint16
	Rate    int
	LogOnly bool
}

// maxLogs bounds the events logged a second.
const maxLogs = 10

// New returns a limiter with cfg's settings, which Check must accept. log, when not nil, is
// called (on the query's goroutine) when an account becomes limited, at most maxLogs times a
// second.
func New(cfg Config, log func(Event)) *Limiter {
	size := max(64, 1<<bits.Len(uint(max(cfg.TableSize, 1)-1)))
	l := &Limiter{
		cfg: cfg, slots: make([]atomic.Uint64, size), mask: uint64(size/setSize - 1), seed: maphash.MakeSeed(),
		epoch: time.Now(), window: uint64(cfg.Window / time.Second), exempt: newExemptSet(cfg.Exempt), log: log,
	}
	l.v4 = mask128(cfg.IPv4Prefix + 96)
	l.v6 = mask128(cfg.IPv6Prefix)
	return l
}

// mask128 returns the mask of the first n bits of a 128-bit address, as two words.
func mask128(n int) [2]uint64 {
	hi, lo := ^uint64(0), ^uint64(0)
	switch {
	case n <= 0:
		hi, lo = 0, 0
	case n < 64:
		hi, lo = hi<<(64-n), 0
	case n < 128:
		lo <<= 128 - n
	}
	return [2]uint64{hi, lo}
}

// Config returns the limiter's settings.
func (l *Limiter) Config() Config { return l.cfg }

// Slots returns the number of accounts the table holds.
func (l *Limiter) Slots() int { return len(l.slots) }

// Check decides on one UDP response, and counts the decision. It takes no lock and allocates
// nothing (but for the log line of an account that just became limited).
func (l *Limiter) Check(q Query, now time.Time) Decision {
	rate := l.cfg.Rates[q.Kind]
	if rate == 0 {
		count(q.Kind, Allowed)
		return Allow
	}
	if l.exempt.contains(q.Client) {
		count(q.Kind, Exempt)
		return Allow
	}
	net := l.network(q.Client)
	h := l.hash(net, q)
	limited, started := l.debit(h, uint64(rate), uint64(now.Sub(l.epoch)/time.Second))
	if started && l.log != nil {
		l.logEvent(q, net, rate, now)
	}
	switch {
	case !limited:
		count(q.Kind, Allowed)
		return Allow
	case l.cfg.LogOnly:
		count(q.Kind, LoggedOnly)
		return Allow
	case l.cfg.Slip > 0 && rand.Uint32N(uint32(l.cfg.Slip)) == 0:
		count(q.Kind, Slipped)
		return Slip
	}
	count(q.Kind, Dropped)
	return Drop
}

// network returns the client's network, as the two words of its 128-bit (IPv4-mapped for
// IPv4) address.
func (l *Limiter) network(client netip.Addr) [2]uint64 {
	client = client.Unmap()
	m := l.v6
	if client.Is4() {
		m = l.v4
	}
	a := client.As16() // an IPv4 address as IPv4-mapped, whose first 96 bits the mask keeps
	hi := uint64(a[0])<<56 | uint64(a[1])<<48 | uint64(a[2])<<40 | uint64(a[3])<<32 | uint64(a[4])<<24 | uint64(a[5])<<16 | uint64(a[6])<<8 | uint64(a[7])
	lo := uint64(a[8])<<56 | uint64(a[9])<<48 | uint64(a[10])<<40 | uint64(a[11])<<32 | uint64(a[12])<<24 | uint64(a[13])<<16 | uint64(a[14])<<8 | uint64(a[15])
	return [2]uint64{hi & m[0], lo & m[1]}
}

// hash returns the account's hash: the name's, keyed by the limiter's seed, mixed with the
// network, the kind and the type.
func (l *Limiter) hash(net [2]uint64, q Query) uint64 {
	var x uint64
	switch q.Kind {
	case Error:
	case Positive:
		x = maphash.String(l.seed, q.Name) ^ uint64(q.Qtype)<<48
	default:
		x = maphash.String(l.seed, q.Name)
	}
	x ^= uint64(q.Kind) << 61
	x = mix(x ^ net[0])
	return mix(x ^ net[1])
}

// mix is a 64-bit finalizer (splitmix64's): every bit of the result depends on every bit of x.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// logEvent logs that q's account became limited, unless maxLogs were logged this second.
func (l *Limiter) logEvent(q Query, net [2]uint64, rate int, now time.Time) {
	sec := uint64(now.Unix())
	for {
		old := l.logged.Load()
		n := old & 0xff
		if old>>8 != sec {
			n = 0
		}
		if n >= maxLogs {
			return
		}
		if l.logged.CompareAndSwap(old, sec<<8|(n+1)) {
			break
		}
	}
	var a [16]byte
	for i := range 8 {
		a[i], a[8+i] = byte(net[0]>>(56-8*i)), byte(net[1]>>(56-8*i))
	}
	addr, bits := netip.AddrFrom16(a), l.cfg.IPv6Prefix
	if q.Client.Unmap().Is4() {
		addr, bits = addr.Unmap(), l.cfg.IPv4Prefix
	}
	// A copy of the name: the caller's may be memory of its own (the fast path's query), which
	// must not leave the call.
	l.log(Event{Network: netip.PrefixFrom(addr, bits), Kind: q.Kind, Name: strings.Clone(q.Name), Qtype: q.Qtype, Rate: rate, LogOnly: l.cfg.LogOnly})
}
