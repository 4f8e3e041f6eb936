package gslb

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin/metrics/vars"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/answer"
)

// logSample logs one fast-path query in the log plugin's common format.
func logSample(pkt, resp []byte, src netip.Addr, tcp bool) {
	var m dns.Msg
	if m.Unpack(pkt) != nil || len(m.Question) != 1 || len(resp) < 4 {
		return
	}
	proto := "udp"
	if tcp {
		proto = "tcp"
	}
	flags := "qr"
	if resp[2]&0x04 != 0 {
		flags += ",aa"
	}
	q := m.Question[0]
	log.Infof("[fastpath] %s - %d \"%s IN %s %s %d\" %s %s %d", src, m.Id, dns.TypeToString[q.Qtype], q.Name, proto, len(pkt),
		dns.RcodeToString[int(resp[3]&0xf)], flags, len(resp))
}

// monitoredTypes are the query types CoreDNS's metrics count by name (the prometheus plugin's
// list); the others count as "other", the last of fastMetrics' type series.
var monitoredTypes = []uint16{
	dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeDNSKEY, dns.TypeDS, dns.TypeMX, dns.TypeNSEC3,
	dns.TypeNSEC, dns.TypeNS, dns.TypePTR, dns.TypeRRSIG, dns.TypeSOA, dns.TypeSRV, dns.TypeTXT,
	dns.TypeHTTPS, dns.TypeSVCB, dns.TypeIXFR, dns.TypeAXFR, dns.TypeANY,
}

// typeIndex returns the place of qtype in monitoredTypes, or len(monitoredTypes) for "other".
func typeIndex(qtype uint16) int {
	for i, t := range monitoredTypes {
		if t == qtype {
			return i
		}
	}
	return len(monitoredTypes)
}

// lazyCounter is a series resolved at its first use: the fast path answers any type with any
// rcode, and CoreDNS's metrics show the series of those that were answered only.
type lazyCounter struct {
	c atomic.Pointer[prometheus.Counter]
}

// get returns the series, resolving it with make the first time.
func (l *lazyCounter) get(make func() prometheus.Counter) prometheus.Counter {
	if c := l.c.Load(); c != nil {
		return *c
	}
	c := make()
	l.c.Store(&c)
	return c
}

// fastMetrics are CoreDNS's query metrics (those its prometheus plugin records for every query
// of the chain) for the fast path's answers, resolved once per series so that a query only
// adds to them.
type fastMetrics struct {
	server, zone string
	// requests by transport (UDP, TCP), family (IPv4, IPv6) and type (typeIndex); responses
	// by rcode.
	requests          [2][2][]lazyCounter
	responses         [16]lazyCounter
	do                prometheus.Counter
	duration          prometheus.Observer
	reqSize, respSize [2]prometheus.Observer
}

// protos are the transport labels of the metrics, by fastMetrics' index.
var protos = [2]string{"udp", "tcp"}

// newFastMetrics resolves the series of CoreDNS's metrics that the fast path of the server
// (its address, "dns://HOST:PORT") of the block's zone records, with the labels the prometheus
// plugin gives them.
func newFastMetrics(server, zone string) *fastMetrics {
	m := &fastMetrics{server: server, zone: zone}
	const view = ""
	for p := range protos {
		for f := range 2 {
			m.requests[p][f] = make([]lazyCounter, len(monitoredTypes)+1)
		}
		m.reqSize[p] = vars.RequestSize.WithLabelValues(server, zone, view, protos[p])
		m.respSize[p] = vars.ResponseSize.WithLabelValues(server, zone, view, protos[p])
	}
	m.do = vars.RequestDo.WithLabelValues(server, zone, view)
	m.duration = vars.RequestDuration.WithLabelValues(server, zone, view)
	return m
}

// observe records one fast-path query and its response.
func (m *fastMetrics) observe(pkt, resp []byte, src netip.Addr, tcp bool, start time.Time) {
	const view = ""
	p, fi := 0, 0
	if tcp {
		p = 1
	}
	if !src.Is4() {
		fi = 1
	}
	qtype, do := answer.FastQueryInfo(pkt)
	ti := typeIndex(qtype)
	m.requests[p][fi][ti].get(func() prometheus.Counter {
		name := "other"
		if ti < len(monitoredTypes) {
			name = dns.TypeToString[monitoredTypes[ti]]
		}
		return vars.RequestCount.WithLabelValues(m.server, m.zone, view, protos[p], []string{"1", "2"}[fi], name)
	}).Inc()
	rcode := 0
	if len(resp) >= 4 {
		rcode = int(resp[3] & 0xf)
	}
	m.responses[rcode].get(func() prometheus.Counter {
		return vars.ResponseRcode.WithLabelValues(m.server, m.zone, view, dns.RcodeToString[rcode], pluginName)
	}).Inc()
	if do {
		m.do.Inc()
	}
	m.duration.Observe(time.Since(start).Seconds())
	m.reqSize[p].Observe(float64(len(pkt)))
	m.respSize[p].Observe(float64(len(resp)))
}
