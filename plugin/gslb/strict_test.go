package gslb

import (
	"testing"

	"github.com/miekg/dns"
)

func TestFixRcode(t *testing.T) {
	reply := func(rcode int, edit func(*dns.Msg)) []byte {
		q := new(dns.Msg)
		q.SetQuestion("www.example.org.", dns.TypeA)
		if edit != nil {
			edit(q)
		}
		m := new(dns.Msg)
		m.SetRcode(q, rcode)
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	noQuestion := func(m *dns.Msg) { m.Question = nil }
	zeroTypeClass := func(m *dns.Msg) { m.Question[0].Qtype, m.Question[0].Qclass = 0, 0 }
	tests := []struct {
		name  string
		reply []byte
		want  int
	}{
		{"SERVFAIL without a question", reply(dns.RcodeServerFailure, noQuestion), dns.RcodeFormatError},
		{"REFUSED to type 0 class 0", reply(dns.RcodeRefused, zeroTypeClass), dns.RcodeFormatError},
		{"REFUSED to the root, type 0 class 0", reply(dns.RcodeRefused, func(m *dns.Msg) { zeroTypeClass(m); m.Question[0].Name = "." }), dns.RcodeFormatError},
		{"SERVFAIL with a question", reply(dns.RcodeServerFailure, nil), dns.RcodeServerFailure},
		{"REFUSED to type A", reply(dns.RcodeRefused, nil), dns.RcodeRefused},
		{"REFUSED to class 0 of type A", reply(dns.RcodeRefused, func(m *dns.Msg) { m.Question[0].Qclass = 0 }), dns.RcodeRefused},
		{"REFUSED without a question", reply(dns.RcodeRefused, noQuestion), dns.RcodeRefused},
		{"NOERROR to type 0 class 0", reply(dns.RcodeSuccess, zeroTypeClass), dns.RcodeSuccess},
		{"NOERROR without a question", reply(dns.RcodeSuccess, noQuestion), dns.RcodeSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := append([]byte(nil), tt.reply...)
			fixRcode(b)
			m := new(dns.Msg)
			if err := m.Unpack(b); err != nil {
				t.Fatal(err)
			}
			if m.Rcode != tt.want {
				t.Fatalf("rcode %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[tt.want])
			}
			b[3] = tt.reply[3]
			if string(b) != string(tt.reply) {
				t.Fatal("fixRcode changed more than the rcode")
			}
		})
	}
	for _, short := range [][]byte{nil, {1, 2, 3}, reply(dns.RcodeRefused, zeroTypeClass)[:14]} {
		fixRcode(short) // must not panic
	}
}

// FuzzFixRcode: any bytes, no panic, and at most the rcode changes.
func FuzzFixRcode(f *testing.F) {
	f.Add([]byte("\x00\x01\x81\x05\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x00\x00\x00\x00\x00"))
	f.Add([]byte("\x00\x01\x81\x02\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := append([]byte(nil), b...)
		fixRcode(b)
		if len(b) >= 4 {
			b[3], orig[3] = 0, 0
		}
		if string(b) != string(orig) {
			t.Fatal("changed more than the rcode")
		}
	})
}
