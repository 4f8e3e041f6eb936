package catalog

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// TestPublishedRTTs: a record that publishes its RTTs answers localrtt-<record> with one TXT
// record (TTL 0) per backend with an address and a measured RTT, other sites' included, in
// the record's order, an address of two ports once; a record that does not publishes none.
func TestPublishedRTTs(t *testing.T) {
	z := mustZone(t, "example.org", `
records:
  app.example.org.:
    mode: chain
    chain: [rtt]
    backends:
      - {address: 10.0.0.1, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, port: 80, healthchecks: [{type: tcp}]}
      - {address: 10.0.0.2, port: 81, healthchecks: [{type: tcp}]}
      - {address: "2001:db8::2", site: us, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.3, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: www.example.net., healthchecks: [{type: tcp, params: {port: 80}}]}
`)
	rtts := map[string]time.Duration{
		"app.example.org.|10.0.0.1|0":         12345 * time.Microsecond,
		"app.example.org.|10.0.0.2|80":        2 * time.Millisecond,
		"app.example.org.|10.0.0.2|81":        3 * time.Millisecond,
		"app.example.org.|2001:db8::2|0":      80 * time.Millisecond,
		"app.example.org.|www.example.net.|0": time.Millisecond,
	}
	for _, publish := range []bool{true, false} {
		rc := &z.Records[0]
		rc.PublishRTT = publish
		rc.Backends[3].Remote, rc.Backends[3].External, rc.Backends[3].MeasureOnly = true, true, true
		hs := states{}
		for key, rtt := range rtts {
			hs.State(key).Set(health.Up)
			hs.State(key).SetRTT(rtt)
		}
		snap, err := Build([]*config.Zone{z}, hs)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rr := range snap.Records()[0].View().Extra().PublishedRTTs {
			txt := rr.(*dns.TXT)
			if txt.Hdr.Name != "localrtt-app.example.org." || txt.Hdr.Ttl != 0 {
				t.Errorf("published as %s", txt.Hdr.String())
			}
			got = append(got, strings.Join(txt.Txt, "|"))
		}
		var want []string
		if publish {
			want = []string{"10.0.0.1=12.345ms", "10.0.0.2=2ms", "2001:db8::2=80ms"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("publish %v: %v, want %v", publish, got, want)
		}
	}
}

// TestParseRTT reads what FormatRTT writes and refuses anything else.
func TestParseRTT(t *testing.T) {
	tests := []struct {
		in   string
		addr string
		rtt  time.Duration
		err  string
	}{
		{in: "192.0.2.10=12.345ms", addr: "192.0.2.10", rtt: 12345 * time.Microsecond},
		{in: "2001:db8::1=1s", addr: "2001:db8::1", rtt: time.Second},
		{in: "::ffff:192.0.2.1=1ms", addr: "192.0.2.1", rtt: time.Millisecond},
		{in: "192.0.2.10", err: `"192.0.2.10" is not ADDRESS=RTT`},
		{in: "host=1ms", err: `"host" is not an IP address`},
		{in: "fe80::1%eth0=1ms", err: "is not an IP address"},
		{in: "192.0.2.10=0ms", err: "is not a duration from 1µs to 1m0s"},
		{in: "192.0.2.10=-1ms", err: "is not a duration"},
		{in: "192.0.2.10=500ns", err: "is not a duration"},
		{in: "192.0.2.10=2m", err: "is not a duration"},
		{in: "192.0.2.10=fast", err: "is not a duration"},
	}
	for _, tt := range tests {
		addr, rtt, err := ParseRTT(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want one containing %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || addr != netip.MustParseAddr(tt.addr) || rtt != tt.rtt):
			t.Errorf("%q: %v %v %v, want %s %v", tt.in, addr, rtt, err, tt.addr, tt.rtt)
		}
	}
	got, err := ParseRTTs([]string{"192.0.2.1=1ms", "bad", "192.0.2.1=5ms", "192.0.2.2=2ms"})
	if err == nil || len(got) != 2 || got[netip.MustParseAddr("192.0.2.1")] != time.Millisecond {
		t.Errorf("ParseRTTs: %v, %v; want the first of each address and an error for the bad one", got, err)
	}
}

// FuzzParseRTT: no input crashes the parser, and what it accepts formats back to an equal
// value (to the microsecond).
func FuzzParseRTT(f *testing.F) {
	for _, s := range []string{"192.0.2.10=12.345ms", "2001:db8::1=1s", "=", "1.2.3.4=1e3us"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, rtt, err := ParseRTT(s)
		if err != nil {
			return
		}
		a2, r2, err := ParseRTT(FormatRTT(addr, rtt))
		if err != nil || a2 != addr || r2 != rtt.Truncate(time.Microsecond) {
			t.Fatalf("%q: %v %v round-trips to %v %v (%v)", s, addr, rtt, a2, r2, err)
		}
	})
}
