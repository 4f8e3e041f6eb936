package fastpath

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/config"
)

// packetsDesc is coredns_gslb_fastpath_packets_total: the UDP packets of each fast-path address
// by the path they took. It is read from the live servers' counts when scraped, so that the loops
// only add to atomics.
var packetsDesc = prometheus.NewDesc(
	prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "fastpath_packets_total"),
	"UDP packets of the fast path's addresses, by path: fast (answered in its loops), slow (served by CoreDNS's chain) or dropped (longer than its buffer, or the slow path's queue full). The count starts again when a Corefile reload makes new sockets.",
	[]string{"address", "path"}, nil)

// tcpQueriesDesc, tcpConnsDesc and tcpRefusedDesc are the TCP loops' queries by path, their
// open connections and the connections refused at the limit, per address.
var (
	tcpQueriesDesc = prometheus.NewDesc(
		prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "fastpath_tcp_queries_total"),
		"Queries of the fast path's TCP connections, by path: fast (answered in its loops), slow (served by CoreDNS's chain) or dropped (the slow path's queue full). The count starts again when a Corefile reload makes new sockets.",
		[]string{"address", "path"}, nil)
	tcpConnsDesc = prometheus.NewDesc(
		prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "fastpath_tcp_connections"),
		"TCP connections open on the fast path's loops.",
		[]string{"address"}, nil)
	tcpRefusedDesc = prometheus.NewDesc(
		prometheus.BuildFQName(config.MetricsNamespace, config.MetricsSubsystem, "fastpath_tcp_refused_total"),
		"TCP connections the fast path closed as it accepted them, its loops having their limit of connections open.",
		[]string{"address"}, nil)
)

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
func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- packetsDesc
	ch <- tcpQueriesDesc
	ch <- tcpConnsDesc
	ch <- tcpRefusedDesc
}

// Collect implements prometheus.Collector. Two blocks' servers of one address (during a
// reload) add up.
func (collector) Collect(ch chan<- prometheus.Metric) {
	live.Lock()
	sums, tcp := map[[2]string]uint64{}, map[[2]string]uint64{}
	conns, refused := map[string]int64{}, map[string]uint64{}
	for s := range live.servers {
		c := s.counts
		sums[[2]string{s.addr, "fast"}] += c.Fast.Load()
		sums[[2]string{s.addr, "slow"}] += c.Slow.Load()
		sums[[2]string{s.addr, "dropped"}] += c.Dropped.Load()
		if len(s.lns) == 0 {
			continue
		}
		tcp[[2]string{s.addr, "fast"}] += c.TCPFast.Load()
		tcp[[2]string{s.addr, "slow"}] += c.TCPSlow.Load()
		tcp[[2]string{s.addr, "dropped"}] += c.TCPDropped.Load()
		conns[s.addr] += c.TCPConns.Load()
		refused[s.addr] += c.TCPRefused.Load()
	}
	live.Unlock()
	for k, v := range sums {
		ch <- prometheus.MustNewConstMetric(packetsDesc, prometheus.CounterValue, float64(v), k[0], k[1])
	}
	for k, v := range tcp {
		ch <- prometheus.MustNewConstMetric(tcpQueriesDesc, prometheus.CounterValue, float64(v), k[0], k[1])
	}
	for a, v := range conns {
		ch <- prometheus.MustNewConstMetric(tcpConnsDesc, prometheus.GaugeValue, float64(v), a)
		ch <- prometheus.MustNewConstMetric(tcpRefusedDesc, prometheus.CounterValue, float64(refused[a]), a)
	}
}

// socketsBefore returns, with live locked, the count of the UDP sockets and TCP listeners of
// addr's other live fast paths that were bound before s's (in their groups, they come first).
func socketsBefore(s *Server) (udp, tcp int) {
	for o := range live.servers {
		if o != s && o.addr == s.addr && o.seq < s.seq {
			udp += len(o.socks)
			tcp += len(o.lns)
		}
	}
	return udp, tcp
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
