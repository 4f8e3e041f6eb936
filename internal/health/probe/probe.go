// Package probe holds the health-check protocols: one prober per check type (http, tcp,
// icmp, dns, grpc, mysql, lua, exec, custom), the typed reading of their parameters, the source
// addresses their connections leave from (probe_source), and the epoll Poller on which plain
// tcp and http probes run without a goroutine of their own.
//
// Its interface is one prober type and one compile entry point, after blackbox_exporter's
// prober package: Compile (or the Compile of a Compiler, for the checks of one configuration
// load) looks a check's type up in a registry of constructors (constructors, below) and
// returns a Compiled check whose Prober yields a Result.
//
// Package health imports this package, never the other way round: the health Manager
// schedules compiled checks, owns the Poller's lifetime and feeds Results to its rise/fall
// machines, while a prober knows nothing of schedules, backends, state or cluster mode. The
// other direction would make the protocols depend on the machinery that runs them, and leave
// the manager unable to make its own Poller. The min-heap that both the scheduler and the
// Poller wait in is package health/timequeue, which neither of them owns.
//
// To add a protocol, write one file (with its tests beside it) holding a constructor
//
//	func newFooProbe(p *params, t Target, timeout time.Duration) (Prober, error)
//
// that reads every parameter it knows from p (parameters nobody reads are reported as
// unknown) and returns a Prober that is safe for concurrent use and returns by its context's
// deadline; then register it under its type name in constructors. A prober that holds
// resources implements io.Closer (see Release); one that can run on the Poller implements
// asyncStarter. The configuration loader, which cannot import this package (this one imports
// it), has a list of the type names of its own, config.CheckTypes: TestRegistryMatchesConfig
// fails until the new name is there too.
package probe

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Target is the backend a check probes.
type Target struct {
	// Host is the backend's address for dialing: an IP literal, or a host name without the
	// trailing dot.
	Host string
	// IP is the backend's address when it is an IP address.
	IP netip.Addr
	// Port is the backend's port, 0 when the backend has none; a check's own port wins.
	Port uint16
	// Record is the name of the backend's record, fully qualified with its trailing dot, and
	// Priority the backend's priority. Only the script checks (lua, custom) hand them to the
	// script, and only they make them part of the check's identity.
	Record   string
	Priority int
}

// HostPort joins the target's host with port for dialing.
func (t Target) HostPort(port int) string {
	return net.JoinHostPort(t.Host, strconv.Itoa(port))
}

// Result is the outcome of one probe.
type Result struct {
	OK bool
	// Reason says why a probe failed (or what it saw when it passed), short enough for a log
	// line: "http 503", "connect: connection refused", "timeout after 5s".
	Reason string
	// Latency is how long the probe took, retries included; the scheduler sets it.
	Latency time.Duration
	// HasLoad is set by the checks that read the backend's load (an http check with a
	// metric, a lua script that returned a number), and Load is what they read, in the
	// backend's own units: NaN when such a check could not read it (the load is unknown).
	HasLoad bool
	Load    float64
}

// Fail returns a failed result with a formatted reason.
func Fail(format string, args ...any) Result {
	return Result{Reason: fmt.Sprintf(format, args...)}
}

// Pass returns a successful result with a reason.
func Pass(reason string) Result { return Result{OK: true, Reason: reason} }

// Prober runs one compiled check against one target. Probe must return by ctx's deadline,
// which the scheduler sets to the check's timeout, and must be safe for concurrent use.
type Prober interface {
	Probe(ctx context.Context) Result
}

// constructor compiles a check's parameters for a target. It reads every parameter it knows
// from p; parameters left unread are reported as unknown.
type constructor func(p *params, t Target, timeout time.Duration) (Prober, error)

// constructors is the registry of check types: the constructor of each by the name a check's
// `type` gives. config.CheckTypes lists the same names (see TestRegistryMatchesConfig).
var constructors = map[string]constructor{
	"http":   newHTTPProbe,
	"tcp":    newTCPProbe,
	"icmp":   newICMPProbe,
	"dns":    newDNSProbe,
	"grpc":   newGRPCProbe,
	"mysql":  newMySQLProbe,
	"lua":    newLuaProbe,
	"exec":   newExecProbe,
	"custom": newCustomProbe,
}

// Compiled is a check ready to run.
type Compiled struct {
	Prober  Prober
	Type    string
	Timeout time.Duration
	// Key identifies identical checks (same type, parameters and target), which run once. It
	// is a 128-bit digest of them, not meant to be read.
	Key string
}

// Compiler compiles the checks of one configuration load, one at a time. Checks compiled by one
// Compiler share what equal parameters need, such as compiled regular expressions: thousands of
// checks with the same `expect` cost one compiled expression; and those of one parameters map
// (a profile's, which the configuration shares between the backends that use it) its
// canonical form, which their keys are made of.
type Compiler struct {
	params params
	// canonical holds the canonical form (writeCanonical) of the parameters of each check, by
	// their identity (config.Params.Identity, which keeps them).
	canonical map[*config.Param]string
	key       []byte // checkKey's buffer
	// timeout and timeoutText are the last timeout checkKey wrote, and its text.
	timeout     time.Duration
	timeoutText string
	// compiled is where the next Compiled are made, a few hundred at a time: a load compiles
	// hundreds of thousands, which live until the health manager has their probers.
	compiled []Compiled
}

// NewCompiler returns a Compiler for one load.
func NewCompiler() *Compiler {
	return newCompiler(nil)
}

// NewCompilers returns n Compilers for the parts of one load, which may compile at the same
// time, each on one goroutine: they share what equal parameters need as one Compiler would, so
// that the checks compiled are the same however the load is split.
func NewCompilers(n int) []*Compiler {
	pl := &pool{regexps: make(map[string]*regexp.Regexp), shared: make(map[string]any)}
	cs := make([]*Compiler, n)
	for i := range cs {
		cs[i] = newCompiler(pl)
	}
	return cs
}

// newCompiler returns a Compiler that shares with the others of pl (nil: none).
func newCompiler(pl *pool) *Compiler {
	return &Compiler{params: params{regexps: make(map[string]*regexp.Regexp), shared: make(map[string]any), pool: pl}, canonical: make(map[*config.Param]string)}
}

// Compile validates hc for target t with a Compiler of its own.
func Compile(hc config.HealthCheck, t Target, defaultTimeout time.Duration) (*Compiled, error) {
	return NewCompiler().Compile(hc, t, defaultTimeout)
}

// Compile validates hc for target t. defaultTimeout is the record's scrape_timeout, used when
// the check sets no `timeout`. Errors name the check's file position.
func (c *Compiler) Compile(hc config.HealthCheck, t Target, defaultTimeout time.Duration) (*Compiled, error) {
	newProbe, ok := constructors[hc.Type]
	if !ok {
		return nil, fmt.Errorf("%s: unknown health-check type %q", hc.Pos, hc.Type)
	}
	p := &c.params
	p.reset(hc.Params)
	timeout := p.Duration("timeout", defaultTimeout)
	source := checkSource(p, hc.Type, t) // probe_source, see source.go
	prober, err := newProbe(p, t, timeout)
	if err == nil {
		err = p.Err()
	}
	if err != nil {
		where := hc.Type + " check"
		if hc.Profile != "" {
			where += " (profile " + hc.Profile + ")"
		}
		// One line, with its position, per problem.
		parts := []error{err}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			parts = joined.Unwrap()
		}
		for i, e := range parts {
			parts[i] = fmt.Errorf("%s: %s: %w", hc.Pos, where, e)
		}
		return nil, errors.Join(parts...)
	}
	key := c.checkKey(hc, t, timeout)
	if id, ok := prober.(interface{ identity() string }); ok {
		key = append(append(key, '|'), id.identity()...) // what the parameters only name, such as a script file's content
	}
	// Kept as a digest: tens of thousands of checks would otherwise each keep a long key.
	sum := sha256.Sum256(key)
	if len(c.compiled) == cap(c.compiled) {
		c.compiled = make([]Compiled, 0, min(max(2*cap(c.compiled), 8), 256))
	}
	c.compiled = append(c.compiled, Compiled{Prober: withCheckSource(prober, source), Type: hc.Type, Timeout: timeout, Key: string(sum[:16])})
	return &c.compiled[len(c.compiled)-1], nil
}

// checkKey returns the identity of a check, in c's buffer (valid until the next call): two
// backends of different records with the same address and the same check share one probe.
func (c *Compiler) checkKey(hc config.HealthCheck, t Target, timeout time.Duration) []byte {
	// Type|host|port|timeout|parameters, appended without fmt's reflection: a load makes
	// hundreds of thousands of keys.
	k := append(append(append(c.key[:0], hc.Type...), '|'), t.Host...)
	k = strconv.AppendUint(append(k, '|'), uint64(t.Port), 10)
	if timeout != c.timeout || c.timeoutText == "" {
		c.timeout, c.timeoutText = timeout, timeout.String() // most checks of a load have one
	}
	k = append(append(append(k, '|'), c.timeoutText...), '|')
	c.key = append(k, c.canonicalForm(hc.Params)...)
	return c.key
}

// canonicalForm returns the canonical form of m (writeCanonical), made once per parameters.
func (c *Compiler) canonicalForm(m config.Params) string {
	id := m.Identity()
	if form, ok := c.canonical[id]; ok && id != nil {
		return form
	}
	var b strings.Builder
	writeCanonical(&b, m)
	if id != nil {
		c.canonical[id] = b.String()
	}
	return b.String()
}

// Release frees what a compiled prober holds (connections, pools) when it will never run
// again.
func Release(p Prober) {
	if c, ok := p.(io.Closer); ok {
		_ = c.Close()
	}
}
