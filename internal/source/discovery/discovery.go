// Package discovery is the source of backend sets that records' discovery blocks name: a JSON
// list over HTTP, a service of the Consul catalog, or the SVCB/HTTPS records of a name. One
// goroutine per block fetches at the block's interval; Merge adds the last good set of each
// block to its record's backends, and never waits on the network. A fetch that fails keeps the
// last good set.
package discovery

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/source"
)

// Memory holds the last good set of every discovery block by its loop key. The sources of
// consecutive Corefile loads of one gslb block share one, so that a new load starts with the
// sets the old one fetched (and their backends keep their health) instead of none.
type Memory struct {
	mu   sync.Mutex
	sets map[string][]Endpoint
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{sets: map[string][]Endpoint{}} }

// Source returns a new source of one Corefile load that starts from the sets m holds (New).
func (m *Memory) Source() source.BackendSets { return New(m) }

func (m *Memory) get(k string) []Endpoint {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sets[k]
}

func (m *Memory) put(k string, set []Endpoint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sets[k] = set
}

// retain forgets the sets of the keys blocks does not have.
func (m *Memory) retain(blocks map[string]block) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.sets {
		if _, ok := blocks[k]; !ok {
			delete(m.sets, k)
		}
	}
}

// Source is the discovery blocks of one gslb block's records, as a source of backend sets.
type Source struct {
	client *http.Client
	memory *Memory

	mu sync.Mutex
	// blocks are the discovery blocks of the configuration Merge saw last, by loop key.
	blocks map[string]block
	// loops are the running fetch loops by key, while watching.
	loops    map[string]*loop
	watching bool
	log      source.Logger
	// notify wakes the goroutine that calls changed: the changes of several loops that come
	// while a reload runs make one more reload.
	notify chan struct{}
	wg     sync.WaitGroup
}

// block is one record's discovery block.
type block struct {
	record string
	d      *config.Discovery
}

// loop fetches one block at its interval. Its fields after stop are guarded by Source.mu.
type loop struct {
	block
	key  string
	stop chan struct{}

	stopped bool
	status  Status
	set     []Endpoint // the last good set, sorted; at first the one memory held
}

// Status is what a record's discovery block has done so far.
type Status struct {
	Type config.DiscoveryType
	// Endpoint is the configured endpoint, without the password of a URL.
	Endpoint string
	Service  string
	// LastSuccess is when a fetch last succeeded; zero before the first one.
	LastSuccess time.Time
	// LastError is the error of the last fetch that failed, and LastErrorTime when it failed;
	// Failing says whether the latest fetch failed.
	LastError     string
	LastErrorTime time.Time
	Failing       bool
	// Backends is the number of backends of the last good set.
	Backends int
}

// New returns a source with no blocks yet; Merge learns them from the zone files' records.
// Until a block's first fetch, Merge gives its record the set memory holds for it.
func New(memory *Memory) *Source {
	return &Source{client: &http.Client{}, memory: memory, blocks: map[string]block{}, loops: map[string]*loop{}}
}

// Name implements source.BackendSets.
func (s *Source) Name() string { return "discovery" }

// key identifies a fetch loop: a block whose fetch settings are unchanged keeps its loop and
// its last good set across reloads.
func key(record string, d *config.Discovery) string {
	return record + "|" + string(d.Type) + "|" + d.Endpoint + "|" + d.Service + "|" + d.Tag + "|" + strconv.FormatInt(int64(d.Interval), 10)
}

// Merge implements source.BackendSets: every record of zones with a discovery block gets the
// backends of the block's last good set that its file does not list already (same address
// and port). The zones it changes are copies. While watching, it starts the loops of new
// blocks and stops those of blocks that are gone.
func (s *Source) Merge(zones []*config.Zone) ([]*config.Zone, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	blocks := map[string]block{}
	out := slices.Clone(zones)
	for zi, z := range zones {
		var recs []config.Record
		for ri := range z.Records {
			r := &z.Records[ri]
			if r.Discovery == nil {
				continue
			}
			k := key(r.Name, r.Discovery)
			blocks[k] = block{record: r.Name, d: r.Discovery}
			set := s.memory.get(k)
			if l := s.loops[k]; l != nil {
				set = l.set
			}
			if len(set) == 0 {
				continue
			}
			if recs == nil {
				recs = slices.Clone(z.Records)
			}
			recs[ri].Backends = merged(r, set)
		}
		if recs != nil {
			zc := *z
			zc.Records = recs
			out[zi] = &zc
		}
	}
	s.blocks = blocks
	s.memory.retain(blocks)
	if s.watching {
		s.reconcile()
	}
	return out, nil
}

// merged returns the backends of r followed by those of set it does not list.
func merged(r *config.Record, set []Endpoint) []config.Backend {
	static := make(map[Endpoint]bool, len(r.Backends))
	for _, b := range r.Backends {
		if b.IP.IsValid() {
			static[Endpoint{IP: b.IP, Port: b.Port}] = true
		}
	}
	out := slices.Grow(slices.Clip(r.Backends), len(set))
	for _, ep := range set {
		if !static[ep] {
			out = append(out, r.Discovery.Backend(ep.IP, ep.Port))
		}
	}
	return slices.Clip(out)
}

// Watch implements source.BackendSets: it starts one loop per discovery block, each fetching at
// once and then at its interval, and calls changed when a block's set changed.
func (s *Source) Watch(changed func(), log source.Logger) (stop func(), err error) {
	s.mu.Lock()
	s.watching, s.log, s.notify = true, log, make(chan struct{}, 1)
	s.reconcile()
	s.mu.Unlock()
	done := make(chan struct{})
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		for {
			select {
			case <-s.notify:
				changed()
			case <-done:
				return
			}
		}
	}()
	return func() {
		s.stopAll()
		close(done)
		<-notified
	}, nil
}

// stopAll stops every loop and waits for them.
func (s *Source) stopAll() {
	s.mu.Lock()
	s.watching = false
	s.blocks = map[string]block{}
	s.reconcile()
	s.mu.Unlock()
	s.wg.Wait()
}

// reconcile starts the loops of blocks that have none and stops those of keys no block has.
// The caller holds s.mu.
func (s *Source) reconcile() {
	for k, l := range s.loops {
		if _, ok := s.blocks[k]; !ok {
			l.stopped = true
			close(l.stop)
			delete(s.loops, k)
			forgetMetrics(l.record, l.d.Type)
		}
	}
	for k, b := range s.blocks {
		if s.loops[k] != nil {
			continue
		}
		l := &loop{block: b, key: k, stop: make(chan struct{}), set: s.memory.get(k),
			status: Status{Type: b.d.Type, Endpoint: shown(b.d), Service: b.d.Service}}
		s.loops[k] = l
		s.wg.Add(1)
		go s.run(l)
	}
}

// run fetches l's block at once and then at its interval, until l is stopped.
func (s *Source) run(l *loop) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-l.stop
		cancel()
	}()
	t := time.NewTicker(l.d.Interval)
	defer t.Stop()
	for {
		set, err := s.fetch(ctx, l.d)
		if s.update(l, set, err) {
			select {
			case s.notify <- struct{}{}:
			default: // a reload is due already
			}
		}
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
	}
}

// update records the outcome of one fetch of l, and reports whether l's set changed.
func (s *Source) update(l *loop, set []Endpoint, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.stopped {
		return false
	}
	now := time.Now()
	st := &l.status
	fetchesTotal.WithLabelValues(l.record, string(l.d.Type), result(err)).Inc()
	if err != nil {
		if !st.Failing {
			s.log.Warningf("discovery %s %s for %s failed, keeping its last %d backends: %v",
				l.d.Type, l.status.Endpoint, l.record, len(l.set), err)
		}
		st.Failing, st.LastError, st.LastErrorTime = true, err.Error(), now
		return false
	}
	if st.Failing {
		s.log.Infof("discovery %s %s for %s recovered: %d backends", l.d.Type, l.status.Endpoint, l.record, len(set))
	}
	st.Failing, st.LastSuccess, st.Backends = false, now, len(set)
	backendsGauge.WithLabelValues(l.record).Set(float64(len(set)))
	lastSuccessGauge.WithLabelValues(l.record).Set(float64(now.UnixNano()) / 1e9)
	s.memory.put(l.key, set)
	if slices.Equal(set, l.set) {
		return false
	}
	l.set = set
	return true
}

// Statuses returns the status of every record's discovery block by record name, while
// watching.
func (s *Source) Statuses() map[string]Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Status, len(s.loops))
	for _, l := range s.loops {
		out[l.record] = l.status
	}
	return out
}

var _ source.BackendSets = (*Source)(nil)
