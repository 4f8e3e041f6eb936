package answer_test

import (
	"fmt"
	"net/netip"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// unprobed is a catalog.HealthSource for backends that nothing probes: each gets a state of its
// own, and backends without health checks are answered as up.
type unprobed struct{}

func (unprobed) State(string) *health.State { return &health.State{} }

// A snapshot is compiled from loaded zones; Respond answers one query from it.
func ExampleRespond() {
	yaml := `
records:
  www.example.org.:
    mode: failover
    record_ttl: 30
    backends:
      - {address: 192.0.2.10, priority: 1}
      - {address: 198.51.100.10, priority: 2}
`
	z, err := config.ParseZone("example.org.yml", []byte(yaml), "example.org.", nil, 1)
	if err != nil {
		panic(err)
	}
	snap, err := catalog.Build([]*config.Zone{z}, unprobed{})
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"www.example.org.", "nope.example.org.", "www.example.net."} {
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeA)
		m, res := answer.Respond(snap, answer.Options{}, answer.Query{Msg: q, Source: netip.MustParseAddr("203.0.113.7")})
		switch res {
		case answer.NotOurs:
			fmt.Println(name, "is not ours: the next plugin answers")
		default:
			fmt.Println(name, dns.RcodeToString[m.Rcode], "authoritative", m.Authoritative)
			for _, rr := range m.Answer {
				if a, ok := rr.(*dns.A); ok {
					fmt.Println("  A", a.A, "TTL", a.Hdr.Ttl)
				}
			}
		}
	}
	// Output:
	// www.example.org. NOERROR authoritative true
	//   A 192.0.2.10 TTL 30
	// nope.example.org. NXDOMAIN authoritative true
	// www.example.net. is not ours: the next plugin answers
}
