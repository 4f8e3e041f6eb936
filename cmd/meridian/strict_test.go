package main

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/meridian-gslb/meridian/internal/testutil"
	"github.com/miekg/dns"
)

// strictZone is a gslb zone for TestMalformedQueriesAnswerLikeBINDAndKnot.
const strictZone = `records:
  www.example.org.: {backends: [{address: 192.0.2.10}]}
`

// dropped stands for no reply in malformedQuery's table.
const dropped = -1

// malformedQuery is a query that RFC 1035, RFC 6891 or RFC 7871 makes a format error, as a raw
// packet, with what each reference server answers it.
type malformedQuery struct {
	name string
	pkt  []byte
	// bind and knot are the rcodes BIND 9 and Knot DNS answer, or dropped.
	bind, knot int
}

// malformedQueries are the queries of TestMalformedQueriesAnswerLikeBINDAndKnot.
func malformedQueries(t *testing.T) []malformedQuery {
	t.Helper()
	pack := func(m *dns.Msg) []byte {
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)
	www := pack(q)
	twoOPT := q.Copy()
	twoOPT.SetEdns0(1232, false)
	twoOPT.Extra = append(twoOPT.Extra, &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT, Class: 1232}})
	ecs := q.Copy()
	ecs.SetEdns0(1232, false)
	ecs.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 8, Address: net.IPv4(10, 0, 0, 0).To4()}}
	padded := pack(ecs)
	// The address of the /8, 10, in four octets instead of one: the option's, the OPT's and the
	// packet's lengths grow by three.
	padded = append(padded, 0, 0, 0)
	binary.BigEndian.PutUint16(padded[len(padded)-10:], 8)
	binary.BigEndian.PutUint16(padded[len(padded)-14:], binary.BigEndian.Uint16(padded[len(padded)-14:])+3)
	return []malformedQuery{
		{"a question counted but absent", www[:12], dns.RcodeFormatError, dropped},
		{"a question without type and class", www[:len(www)-4], dns.RcodeFormatError, dropped},
		{"two OPT records", pack(twoOPT), dns.RcodeFormatError, dns.RcodeFormatError},
		// Knot reads the option and ignores the octets.
		{"ECS address longer than its prefix", padded, dns.RcodeFormatError, dns.RcodeSuccess},
	}
}

// TestMalformedQueriesAnswerLikeBINDAndKnot sends each malformed query over UDP to Meridian
// (with ECS on), BIND 9 and Knot DNS, all authoritative for example.org. Meridian must answer
// each FORMERR; the reference servers must answer as the table says, which shows where they
// differ: Knot drops the queries without a whole question, and answers the padded ECS address.
func TestMalformedQueriesAnswerLikeBINDAndKnot(t *testing.T) {
	t.Parallel()
	key := testutil.TSIGKey{Name: "strict.", Algorithm: dns.HmacSHA256, Secret: "c3RyaWN0LXN0cmljdC1zdHJpY3Qtc3RyaWN0LXN0cmk="}
	zones := map[string][]string{"example.org.": {"www A 192.0.2.10"}}
	meridian := serveZone(t, strictZone, "  use_edns_csubnet\n").Addr
	bind, knot := testutil.StartBIND(t, key, zones).Addr, testutil.StartKnot(t, key, zones).Addr
	rcode := func(addr string, pkt []byte) int {
		reply := rawAnswer(t, addr, pkt)
		if reply == nil {
			return dropped
		}
		if len(reply) < 12 || reply[2]&0x80 == 0 {
			t.Fatalf("%s: not a reply: % x", addr, reply)
		}
		return int(reply[3] & 0x0f)
	}
	name := func(rcode int) string {
		if rcode == dropped {
			return "no reply"
		}
		return dns.RcodeToString[rcode]
	}
	for _, q := range malformedQueries(t) {
		t.Run(q.name, func(t *testing.T) {
			for _, s := range []struct {
				server, addr string
				want         int
			}{{"meridian", meridian, dns.RcodeFormatError}, {"bind", bind, q.bind}, {"knot", knot, q.knot}} {
				if got := rcode(s.addr, q.pkt); got != s.want {
					t.Errorf("%s answers %s, want %s", s.server, name(got), name(s.want))
				}
			}
		})
	}
}
