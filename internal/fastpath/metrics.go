package fastpath

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/config"
)

// packetsDesc is coredns_gslb_fastpath_packets_total: the packets of each fast-path address by
// the path they took. It is read from the live servers' counts when scraped, so that the loops
// only add to atomics.
var packetsDesc = prometheus.NewDesc(
	prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "fastpath_packets_total"),
	"UDP packets of the fast path's addresses, by path: fast (answered in its loops), slow (served by CoreDNS's chain) or dropped (longer than its buffer, or the slow path's queue full). The count starts again when a Corefile reload makes new sockets.",
	[]string{"address", "path"}, nil)

// live are the servers the collector reports, registered by Listen and taken out by Close.
var live = struct {
	sync.Mutex
	servers map[*Server]bool
	seq     uint64 // the order in which the servers bound their sockets
}{servers: map[*Server]bool{}}

func init() { prometheus.MustRegister(collector{}) }

// collector reports the live servers' counts.
type collector struct{}

// Describe implements prometheus.Collector.
func (collector) Describe(ch chan<- *prometheus.Desc) { ch <- packetsDesc }

// Collect implements prometheus.Collector. Two blocks' servers of one address (during a
// reload) add up.
func (collector) Collect(ch chan<- prometheus.Metric) {
	live.Lock()
	sums := map[[2]string]uint64{}
	for s := range live.servers {
		sums[[2]string{s.addr, "fast"}] += s.counts.Fast.Load()
		sums[[2]string{s.addr, "slow"}] += s.counts.Slow.Load()
		sums[[2]string{s.addr, "dropped"}] += s.counts.Dropped.Load()
	}
	live.Unlock()
	for k, v := range sums {
		ch <- prometheus.MustNewConstMetric(packetsDesc, prometheus.CounterValue, float64(v), k[0], k[1])
	}
}

// socketsBefore returns, with live locked, the count of the sockets of addr's other live fast
// paths that were bound before s's (in its group, they come first).
func socketsBefore(s *Server) int {
	n := 0
	for o := range live.servers {
		if o != s && o.addr == s.addr && o.seq < s.seq {
			n += len(o.socks)
		}
	}
	return n
}

// track adds s to (or, with on false, takes it out of) the servers the collector reports.
func track(s *Server, on bool) {
	live.Lock()
	defer live.Unlock()
	if on {
		live.seq++
		s.seq = live.seq
		live.servers[s] = true
	} else {
		delete(live.servers, s)
	}
}
