// Package answerlog is the answer log of the fast path (a publisher): the answers the fast
// path gives, sampled or every one, handed from its loops to a writer without blocking them.
// A loop copies the query, the response, the client and the snapshot that answered into a
// bounded queue of reused slots (no allocation, no lock: one compare-and-swap); an answer that
// finds the queue full is dropped and counted. One goroutine hands each queued answer to the
// sink the adapter attached, which writes the dnstap frames that CoreDNS's dnstap plugin
// writes for the plugin chain's answers, their extra field carrying the decision
// (answer.Decide), recomputed from the entry beside the query path. For the plugin chain's
// answers, a Cell per query holds what gslb answered until the dnstap plugins ask for its
// decision (the metadata label gslb/decision).
package answerlog

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/periodic"
)

// drainEvery is how long the writer sleeps once it emptied the queue.
const drainEvery = 10 * time.Millisecond

// Entry is one answer of the fast path, as the sink gets it. Its slices belong to the log:
// the sink copies what it keeps.
type Entry struct {
	// Query and Response are the packets, in wire form.
	Query, Response []byte
	// Client is the query's transport source address, and TCP set when it came over TCP.
	Client netip.Addr
	TCP    bool
	// QueryTime is when the query's batch was read, ResponseTime when it was answered.
	QueryTime, ResponseTime time.Time
	// Snapshot answered it.
	Snapshot *catalog.Snapshot
}

// Sink writes one entry. It runs in the log's writer goroutine, one entry at a time.
type Sink func(*Entry)

// Log is the answer log of one gslb block's fast path.
type Log struct {
	sample uint64
	queue  *ring
	sink   atomic.Pointer[Sink]

	// writer drains the queue every drainEvery.
	writer periodic.Loop
}

// New returns the answer log that o asks for (its Sample and Queue, config's defaults when
// zero). It starts nothing: Start does.
func New(o config.AnswerLogOptions) *Log {
	sample, size := o.Sample, o.Queue
	if sample < 1 {
		sample = config.DefaultAnswerLogSample
	}
	if size < 1 {
		size = config.DefaultAnswerLogQueue
	}
	return &Log{sample: uint64(sample), queue: newRing(size)}
}

// Name implements publish.Publisher.
func (l *Log) Name() string { return "answer log" }

// Attach makes sink the writer of the log's entries, until detach is called; the entries
// queued while no sink is attached are dropped and counted.
func (l *Log) Attach(sink Sink) (detach func()) {
	p := &sink
	l.sink.Store(p)
	return func() { l.sink.CompareAndSwap(p, nil) }
}

// Observe queues one answer of the fast path: the query pkt from src (over TCP when tcp is
// set), its response resp, read at start and answered from snap (the engine.FastObserver's arguments and the snapshot). It
// runs in the fast path's loops: it never blocks, takes no lock, and allocates nothing once
// the queue's slots have grown to the packets' sizes. A sampled-out answer costs one draw of
// the per-thread random generator.
func (l *Log) Observe(snap *catalog.Snapshot, pkt, resp []byte, src netip.Addr, tcp bool, start time.Time) {
	if l.sample > 1 && rand.Uint64N(l.sample) != 0 {
		return
	}
	s := l.queue.claim()
	if s == nil {
		countDropped()
		return
	}
	e := &s.entry
	e.Query = append(e.Query[:0], pkt...)
	e.Response = append(e.Response[:0], resp...)
	e.Client, e.TCP, e.QueryTime, e.ResponseTime, e.Snapshot = src, tcp, start, time.Now(), snap
	l.queue.publish(s)
}

// Start starts the writer.
func (l *Log) Start() {
	l.writer.Start(func(context.Context) { l.drain() }, func() time.Duration { return drainEvery })
}

// Stop stops the writer once it has written what was queued.
func (l *Log) Stop() {
	l.writer.Stop()
	l.drain() // the writer is stopped: this is the one consumer now
}

// drain hands every queued entry to the sink, or drops it when none is attached.
func (l *Log) drain() {
	for {
		s := l.queue.next()
		if s == nil {
			return
		}
		if sink := l.sink.Load(); sink != nil {
			(*sink)(&s.entry)
			countWritten()
		} else {
			countDropped()
		}
		s.entry.Snapshot = nil // an old snapshot is not kept alive by a slot
		l.queue.release(s)
	}
}

// DecisionJSON returns what decided the entry's answer (answer.Decide) as the answer log
// writes it, from its packets: opts are the block's answer options, sources its GeoIP sources
// (nil for none). It returns "" for packets that do not unpack. q is the query, unpacked.
func (e *Entry) DecisionJSON(opts answer.Options, sources *geo.Sources) (q *dns.Msg, decision string) {
	q = new(dns.Msg)
	var resp dns.Msg
	if q.Unpack(e.Query) != nil || resp.Unpack(e.Response) != nil || e.Snapshot == nil {
		return nil, ""
	}
	d := answer.Decide(e.Snapshot, opts, answer.Query{Msg: q, Source: e.Client, Geo: sources}, &resp)
	return q, string(d.AppendJSON(nil))
}

// Cell holds what the plugin chain answered one query with, until the dnstap plugins ask for
// its decision (the metadata label gslb/decision); one per query, made when the query's
// metadata is collected.
type Cell struct {
	opts answer.Options
	snap *catalog.Snapshot
	q    answer.Query
	m    *dns.Msg
	json string // the decision, once computed
}

// NewCell returns the cell of a query of a block with the answer options opts.
func NewCell(opts answer.Options) *Cell { return &Cell{opts: opts} }

// Note keeps m, what snap answered q with.
func (c *Cell) Note(snap *catalog.Snapshot, q answer.Query, m *dns.Msg) {
	c.snap, c.q, c.m, c.json = snap, q, m, ""
}

// Value returns the decision as JSON, "" before an answer was noted. It computes it once.
func (c *Cell) Value() string {
	if c.m == nil {
		return ""
	}
	if c.json == "" {
		d := answer.Decide(c.snap, c.opts, c.q, c.m)
		c.json = string(d.AppendJSON(nil))
	}
	return c.json
}
