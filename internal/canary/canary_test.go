package canary

import (
	"strings"
	"testing"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCompare(t *testing.T) {
	expected := Expected{Rcode: "NOERROR", Answer: []string{"10.0.0.1"}, Candidates: []string{"10.0.0.1", "10.0.0.2"}, Scope: 24, TTL: 30}
	tests := []struct {
		name string
		c    Check
		want []string // "kind: part of the text", in order
	}{
		{"the same", Check{Rcode: "NOERROR", Answer: []string{"10.0.0.1"}, TTL: 30, Scope: 24, ECS: "198.51.100.0/24"}, nil},
		{"another candidate without ECS", Check{Rcode: "NOERROR", Answer: []string{"10.0.0.2"}, TTL: 12, Scope: -1}, nil},
		{"a drained address", Check{Rcode: "NOERROR", Answer: []string{"10.0.0.9"}, TTL: 12, Scope: -1}, []string{"answer: serves 10.0.0.9, which this instance does not answer now"}},
		{"another rcode", Check{Rcode: "NXDOMAIN", Scope: -1}, []string{"answer: answers NXDOMAIN, this instance NOERROR"}},
		{"a TTL floor", Check{Rcode: "NOERROR", Answer: []string{"10.0.0.1"}, TTL: 60, Scope: -1}, []string{"ttl: serves TTL 60, above the record's 30"}},
		{"no ECS in the reply", Check{Rcode: "NOERROR", Answer: []string{"10.0.0.2"}, TTL: 30, Scope: -1, ECS: "198.51.100.0/24"},
			[]string{"ecs: its reply to ECS 198.51.100.0/24 carries no client subnet", "answer: for ECS 198.51.100.0/24 serves 10.0.0.2, this instance answers 10.0.0.1"}},
		{"a broader scope", Check{Rcode: "NOERROR", Answer: []string{"10.0.0.1"}, TTL: 30, Scope: 16, ECS: "198.51.100.0/24"}, []string{"ecs: its reply to ECS 198.51.100.0/24 has scope /16, this instance's /24"}},
	}
	for _, tt := range tests {
		tt.c.Expected = expected
		tt.c.compare()
		if len(tt.c.Mismatches) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.c.Mismatches, tt.want)
			continue
		}
		for i, m := range tt.c.Mismatches {
			if kind, text, _ := strings.Cut(tt.want[i], ": "); m.Kind != kind || !strings.Contains(m.Text, text) {
				t.Errorf("%s: mismatch %d is %s: %s, want %s", tt.name, i, m.Kind, m.Text, tt.want[i])
			}
		}
	}
}

func TestCompareDelegation(t *testing.T) {
	tests := []struct {
		name string
		d    Delegation
		want []string
	}{
		{"the same", Delegation{Zone: "example.org.", NS: []string{"ns2.example.org.", "ns1.example.org."}, ExpectedNS: []string{"ns1.example.org.", "ns2.example.org."},
			Glue: map[string][]string{"ns1.example.org.": {"192.0.2.53"}}, ExpectedGlue: map[string][]string{"ns1.example.org.": {"192.0.2.53"}}}, nil},
		{"a stale NS", Delegation{Zone: "example.org.", NS: []string{"ns-old.example.org."}, ExpectedNS: []string{"ns1.example.org."},
			Glue: map[string][]string{"ns-old.example.org.": {"192.0.2.99"}}},
			[]string{"the parent delegates example.org. to ns-old.example.org., the zone names ns1.example.org.", "the parent gives glue 192.0.2.99 for ns-old.example.org."}},
		{"stale glue", Delegation{Zone: "example.org.", NS: []string{"ns1.example.org."}, ExpectedNS: []string{"ns1.example.org."},
			Glue: map[string][]string{"ns1.example.org.": {"192.0.2.99"}}, ExpectedGlue: map[string][]string{"ns1.example.org.": {"192.0.2.53"}}},
			[]string{"the parent's glue of ns1.example.org. is 192.0.2.99, the zone answers 192.0.2.53"}},
	}
	for _, tt := range tests {
		tt.d.compare()
		var got []string
		for _, m := range tt.d.Mismatches {
			got = append(got, m.Text)
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%s: %q, want %q", tt.name, got[i], tt.want[i])
			}
		}
	}
}

func TestMismatchSeries(t *testing.T) {
	f := Found{Target: "127.0.0.1:53", Name: "www.example.org.", Mismatch: Mismatch{Kind: KindTTL}}
	publishMismatches(nil, map[string]Found{f.key(): f})
	if v := promtest.ToFloat64(mismatchGauge.WithLabelValues(f.Target, f.Name, "", KindTTL)); v != 1 {
		t.Errorf("the series is %g", v)
	}
	publishMismatches(map[string]Found{f.key(): f}, nil)
	if n := promtest.CollectAndCount(mismatchGauge); n != 0 {
		t.Errorf("%d series left after the mismatch went", n)
	}
}
