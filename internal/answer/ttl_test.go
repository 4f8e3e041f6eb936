package answer

import (
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// TestAnswersCarryTheViewsTTL: address answers, fallback answers included, carry the TTL the
// record's view chose, and explain says which and why.
func TestAnswersCarryTheViewsTTL(t *testing.T) {
	const yaml = `
records:
  open.example.org.:
    record_ttl: 30
    degraded_ttl: 10
    backends:
      - {address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, healthchecks: [{type: tcp, params: {port: 80}}]}
  specific.example.org.:
    record_ttl: 30
    degraded_ttl: 7
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.1]}
    backends:
      - {address: 10.0.1.1, healthchecks: [{type: tcp, params: {port: 80}}]}
  cname.example.org.:
    record_ttl: 30
    degraded_ttl: 3
    fallback_policy: {mode: fail-specific, fallback_cname: backup.example.net.}
    backends:
      - {address: 10.0.2.1, healthchecks: [{type: tcp, params: {port: 80}}]}
`
	z, err := config.ParseZone("zone.yml", []byte(yaml), "example.org.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	hs := states{}
	snap, err := catalog.Build([]*config.Zone{z}, hs)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, qname string
		qtype       uint16
		up, down    []string // addresses set up and down first
		record      string
		ttl         uint32
		why         string // in the explanation
	}{
		{"healthy", "open.example.org.", dns.TypeA, []string{"10.0.0.1", "10.0.0.2"}, nil, "open.example.org.", 30, "IPv4 ttl: 30 s, record_ttl"},
		{"one down", "open.example.org.", dns.TypeA, nil, []string{"10.0.0.2"}, "open.example.org.", 10, "IPv4 ttl: 10 s, degraded_ttl (backend down"},
		{"fail-open", "open.example.org.", dns.TypeA, nil, []string{"10.0.0.1"}, "open.example.org.", 10, "degraded_ttl (fallback"},
		{"fallback IPs", "specific.example.org.", dns.TypeA, nil, []string{"10.0.1.1"}, "specific.example.org.", 7, "degraded_ttl (fallback"},
		{"fallback CNAME", "cname.example.org.", dns.TypeCNAME, nil, []string{"10.0.2.1"}, "cname.example.org.", 3, "degraded_ttl (fallback"},
	}
	for _, tt := range tests {
		for _, a := range tt.up {
			hs.set(t, snap, tt.record, a, health.Up)
		}
		for _, a := range tt.down {
			hs.set(t, snap, tt.record, a, health.Down)
		}
		m, _ := ask(snap, Options{}, tt.qname, tt.qtype)
		if len(m.Answer) == 0 {
			t.Fatalf("%s: no answer: %v", tt.name, m)
		}
		for _, rr := range m.Answer {
			if rr.Header().Ttl != tt.ttl {
				t.Errorf("%s: %v has TTL %d, want %d", tt.name, rr, rr.Header().Ttl, tt.ttl)
			}
		}
		q := new(dns.Msg)
		q.SetQuestion(tt.qname, tt.qtype)
		ex := Explain(snap, Options{}, Query{Msg: q, Source: testClient})
		if !strings.Contains(strings.Join(ex.Steps, "\n"), tt.why) {
			t.Errorf("%s: explanation lacks %q:\n%s", tt.name, tt.why, ex)
		}
	}
}
