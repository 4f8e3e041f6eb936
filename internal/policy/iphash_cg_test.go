package policy

import (
	"hash/fnv"
	"net"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

// cgPick is CoreDNS-GSLB's ip-hash as its docs/modes.md describes it, written independently of
// the code under test: sort the healthy backends' addresses alphabetically as written, take
// the FNV-1a hash of the client IP's text (Go's net.IP String), and return the address at
// index hash % count.
func cgPick(backends []string, client string) string {
	sorted := append([]string(nil), backends...)
	sort.Strings(sorted)
	h := fnv.New32a()
	h.Write([]byte(net.ParseIP(client).String()))
	return sorted[int(h.Sum32())%len(sorted)]
}

// written makes candidates from addresses as a zone file writes them.
func written(ss ...string) []Candidate {
	out := make([]Candidate, len(ss))
	for i, s := range ss {
		out[i] = Candidate{Host: s}
		if a, err := netip.ParseAddr(s); err == nil {
			out[i].Addr = a
		}
	}
	return out
}

func TestIPHashTextOrderGivesEveryClientCoreDNSGSLBsBackend(t *testing.T) {
	sets := []struct {
		name     string
		backends []string
	}{
		// Text and numeric order disagree: 10.0.0.10 < 10.0.0.100 < 10.0.0.9 < 9.9.9.9 as text.
		{"ipv4", []string{"10.0.0.9", "10.0.0.10", "10.0.0.100", "9.9.9.9", "192.168.1.2"}},
		// Written forms that are not canonical sort as written.
		{"ipv6", []string{"2001:db8::a", "2001:DB8::9", "2001:db8:0:0::10", "fd00::1"}},
		{"host names", []string{"b.example.net.", "a.example.net.", "c.example.net."}},
	}
	var clients []string
	for i := range 1000 {
		clients = append(clients, netip.AddrFrom4([4]byte{byte(i * 37), byte(i >> 2), byte(i * 11), byte(i)}).String())
	}
	for i := range 500 {
		a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}
		a[6], a[9] = byte(i*7), byte(i*13) // zero runs of several lengths
		clients = append(clients, netip.AddrFrom16(a).String())
	}
	for _, tc := range sets {
		t.Run(tc.name, func(t *testing.T) {
			cands := written(tc.backends...)
			text := Prepare(config.ModeIPHash, cands, Options{HashOrder: config.HashOrderText}, nil)
			byValue := Prepare(config.ModeIPHash, cands, Options{HashOrder: config.HashOrderAddress}, nil)
			moved := 0
			for _, c := range clients {
				client := netip.MustParseAddr(c)
				want := cgPick(tc.backends, c)
				got := cands[text.Order[text.Pick(client, nil)[0]]].Host
				if got != want {
					t.Fatalf("client %s: hash_order text picks %s, CoreDNS-GSLB picks %s", c, got, want)
				}
				if cands[byValue.Order[byValue.Pick(client, nil)[0]]].Host != want {
					moved++
				}
			}
			// The default order must differ for these sets, or the test above proves nothing.
			if tc.name != "host names" && moved == 0 {
				t.Errorf("the address order gives every client CoreDNS-GSLB's backend too: pick backends whose text and numeric orders differ")
			}
		})
	}
}

func TestRuleNamesTheHashOrder(t *testing.T) {
	client := netip.MustParseAddr("203.0.113.7")
	for order, want := range map[config.HashOrder]string{
		"":                      "in address order",
		config.HashOrderAddress: "in address order",
		config.HashOrderText:    "in text order",
	} {
		if got := Rule(config.ModeIPHash, Options{HashOrder: order}, client, 2); !strings.HasSuffix(got, want+")") {
			t.Errorf("Rule with order %q = %q, want it to end %q", order, got, want+")")
		}
	}
}
