package proxy

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
)

// BenchmarkRewrite measures one rewrite per kind of upstream answer. The allocations it reports
// are, besides the copy of the upstream answer section that each iteration starts from,
// Meridian's own answer (the synthesized query and answer.Respond's response) and the
// rewritten answer section; an answer of no monitored address allocates nothing.
func BenchmarkRewrite(b *testing.B) {
	snap := testSnapshot(b)
	set(snap, []string{"10.0.0.2"})
	cases := []struct {
		name string
		rrs  []string
	}{
		{"filtered", []string{"www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 10.0.0.2", "www.example.org. 300 IN A 10.0.0.3"}},
		{"unmonitored", []string{"www.example.org. 300 IN A 198.51.100.1", "www.example.org. 300 IN A 198.51.100.2"}},
		{"not listed", []string{"other.example.org. 300 IN A 10.0.0.1"}},
	}
	for _, c := range cases {
		req, m := upstream(b, "www.example.org.", dns.TypeA, c.rrs...)
		answerSection := m.Answer
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Answer = append(m.Answer[:0:0], answerSection...)
				for _, rr := range m.Answer {
					rr.Header().Ttl = 300
				}
				Rewrite(m, snap, answer.Options{}, Client{Request: req, Source: testClient})
			}
		})
	}
}

// FuzzRewrite feeds arbitrary wire-format upstream responses to Rewrite: it never panics, and
// a response that packed before packs after.
func FuzzRewrite(f *testing.F) {
	snap := testSnapshot(f)
	set(snap, []string{"10.0.0.1", "10.4.0.1", "10.5.0.1"})
	seeds := [][]string{
		{"www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN A 10.0.0.2", "www.example.org. 300 IN AAAA 2001:db8::1"},
		{"alias.example.org. 300 IN CNAME www.example.org.", "www.example.org. 300 IN A 10.0.0.1"},
		{"closed.example.org. 300 IN A 10.4.0.1", "specific.example.org. 300 IN A 10.5.0.1"},
		{"www.example.org. 300 IN A 10.0.0.1", "www.example.org. 300 IN RRSIG A 13 3 300 20270101000000 20261201000000 12345 example.org. AAAA"},
	}
	for _, rrs := range seeds {
		_, m := upstream(f, "www.example.org.", dns.TypeA, rrs...)
		wire, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(wire)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		m := new(dns.Msg)
		if err := m.Unpack(wire); err != nil {
			return
		}
		_, packErr := m.Pack()
		req := new(dns.Msg)
		if len(m.Question) > 0 {
			req.SetQuestion(m.Question[0].Name, m.Question[0].Qtype)
		}
		Rewrite(m, snap, answer.Options{}, Client{Request: req, Source: testClient})
		if _, err := m.Pack(); packErr == nil && err != nil {
			t.Fatalf("the rewritten response does not pack: %v\n%s", err, m)
		}
	})
}
