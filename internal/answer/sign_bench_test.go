package answer

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/health"
)

// bigSignedZone is a zone of n records of the shape record (a YAML record body with %d for
// the record's number).
func bigSignedZone(n int, record string) string {
	var s strings.Builder
	s.WriteString("records:\n")
	for i := range n {
		fmt.Fprintf(&s, "  r%d.example.org.: ", i)
		fmt.Fprintf(&s, record+"\n", i/250, i%250)
	}
	return s.String()
}

// The shapes of the benchmarks' records: a failover pair of IPv4 backends (one answer to sign
// per view, and the NSEC record), and a round robin of two IPv4 backends and one IPv6 (three
// answers and the NSEC record).
const (
	failoverPair = "{mode: failover, backends: [{address: 10.1.%[1]d.%[2]d, priority: 1}, {address: 10.2.%[1]d.%[2]d, priority: 2}]}"
	dualStackRR  = `{mode: roundrobin, backends: [{address: 10.1.%[1]d.%[2]d}, {address: 10.2.%[1]d.%[2]d}, {address: "2001:db8::%[1]d:%[2]d"}]}`
)

// BenchmarkResignZone measures a complete pass of signing again a zone of 10,000 records
// (every signature due): the zone's own data and every record's views, on the cores -cpu
// gives (the target: under 2 s on one core, -cpu 1). cpu-s/op is the process's CPU time a
// pass took (user and system), which a shared machine's load does not stretch.
func BenchmarkResignZone(b *testing.B) {
	for _, alg := range []uint8{dns.ECDSAP256SHA256, dns.ED25519} {
		for _, shape := range []struct{ name, record string }{{"failover-pair", failoverPair}, {"dual-stack-roundrobin", dualStackRR}} {
			b.Run(fmt.Sprintf("%s/%s", dns.AlgorithmToString[alg], shape.name), func(b *testing.B) {
				snap, _ := signedSnapshot(b, bigSignedZone(10000, shape.record), signerOfAlgorithm(b, alg, testSigning))
				at := time.Now()
				b.ResetTimer()
				start := cpuTime(b)
				for b.Loop() {
					at = at.Add(testSigning.Validity) // everything is due
					snap.Resign(at)
				}
				b.ReportMetric((cpuTime(b)-start).Seconds()/float64(b.N), "cpu-s/op")
			})
		}
	}
}

// BenchmarkHealthChangeResigns measures what a health change costs a record of a signed zone:
// its view rebuilt and the answers that changed signed, until the new view is swapped in (the
// target: within 10 ms); a backend of a round robin goes down and comes back, each time.
func BenchmarkHealthChangeResigns(b *testing.B) {
	for _, alg := range []uint8{dns.ECDSAP256SHA256, dns.ED25519} {
		b.Run(dns.AlgorithmToString[alg], func(b *testing.B) {
			snap, _ := signedSnapshot(b, roundRobinZone, signerOfAlgorithm(b, alg, testSigning))
			rec := snap.Records()[0]
			var word *health.State
			for _, be := range rec.Backends {
				be.State.Set(health.Up)
				if be.Config.Address == "10.0.0.2" {
					word = be.State
				}
			}
			rec.Refresh()
			st := []health.Status{health.Down, health.Up}
			for i := 0; b.Loop(); i++ {
				word.Set(st[i%2])
				rec.Refresh()
			}
			if rec.View().Extra().Signed == nil || len(rec.View().Extra().Signed.Sets[catalog.IPv4]) == 0 {
				b.Fatal("not signed")
			}
		})
	}
}

// cpuTime returns the CPU time the process used so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSignedAnswers measures a signed zone's queries in process: with the DO bit through
// Respond (the slow path, which copies the prepared signatures; the proof of a name that does
// not exist comes from the cache of on-demand signatures after the first query), packed as
// CoreDNS packs it; with the DO bit through the fast path where it answers them (from the
// prepared signatures: all but NXDOMAIN), and the same queries without DO through the
// fast path, which answers them as in an unsigned zone.
func BenchmarkSignedAnswers(b *testing.B) {
	snap, sources := fastSnapshotSigned(b, false, signerOf(b, testSigning))
	for _, c := range []struct {
		name string
		q    fastCase
		// fastDO is set when the fast path answers the query with the DO bit.
		fastDO bool
	}{
		{"failover/A", fastCase{qname: "www.example.org.", qtype: dns.TypeA, edns: 1232}, true},
		{"geoip/A+ECS", fastCase{qname: "geo.example.org.", qtype: dns.TypeA, edns: 1232, ecs: subnet(1, 24, "198.51.100.0")}, true},
		{"NXDOMAIN", fastCase{qname: "nope.example.org.", qtype: dns.TypeA, edns: 1232}, false},
		{"NODATA/AAAA", fastCase{qname: "v4only.example.org.", qtype: dns.TypeAAAA, edns: 1232}, true},
		{"wildcard/A", fastCase{qname: "foo.app.example.org.", qtype: dns.TypeA, edns: 1232}, true},
	} {
		opts := Options{UseECS: true}
		do := c.q
		do.do = true
		pkt, doPkt := c.q.packet(b), do.packet(b)
		b.Run(c.name+"/DO/Respond+Pack", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := slowWire(b, snap, opts, doPkt, do.client(), false, sources); !ok {
					b.Fatal("no answer")
				}
			}
		})
		fast := func(pkt []byte) func(b *testing.B) {
			return func(b *testing.B) {
				dst := make([]byte, 0, advertisedUDPSize)
				b.ReportAllocs()
				for b.Loop() {
					if _, handled := AppendFast(dst, snap, &opts, pkt, c.q.client(), false, sources, time.Time{}); !handled {
						b.Fatal("not handled")
					}
				}
			}
		}
		if c.fastDO {
			b.Run(c.name+"/DO/AppendFast", fast(doPkt))
		}
		b.Run(c.name+"/AppendFast", fast(pkt))
	}
}
