package published

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

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
