package published

import (
	"slices"
	"testing"
	"time"
)

// TestHeartbeatRoundTrip writes heartbeats and reads them back, and rejects the malformed.
func TestHeartbeatRoundTrip(t *testing.T) {
	h := Heartbeat{Site: "eu", Time: time.Unix(1764586000, 0), Seq: 42, Boot: "0123456789abcdef"}
	got, err := ParseHeartbeat(h.TXT())
	if err != nil || got != h {
		t.Fatalf("ParseHeartbeat(%q) = %+v, %v; want %+v", h.TXT(), got, err, h)
	}
	// Unknown keys and strings without "=" are ignored; the order does not matter.
	extra := append([]string{"v=2", "hello"}, h.TXT()...)
	slices.Reverse(extra)
	if got, err := ParseHeartbeat(extra); err != nil || got != h {
		t.Fatalf("with extra strings: %+v, %v", got, err)
	}
	bad := map[string][]string{
		"no site":      {"time=1", "seq=1", "boot=0123456789abcdef"},
		"bad time":     {"site=eu", "time=x", "seq=1", "boot=0123456789abcdef"},
		"bad seq":      {"site=eu", "time=1", "seq=-1", "boot=0123456789abcdef"},
		"short boot":   {"site=eu", "time=1", "seq=1", "boot=0123"},
		"hex boot":     {"site=eu", "time=1", "seq=1", "boot=0123456789abcdeg"},
		"twice":        {"site=eu", "site=us", "time=1", "seq=1", "boot=0123456789abcdef"},
		"empty record": {},
	}
	for name, txt := range bad {
		if _, err := ParseHeartbeat(txt); err == nil {
			t.Errorf("%s: %q parsed", name, txt)
		}
	}
}

// FuzzParseHeartbeat: a peer's heartbeat is untrusted input; parsing never panics, and what
// parses writes back to the same heartbeat.
func FuzzParseHeartbeat(f *testing.F) {
	f.Add("site=eu", "time=1764586000", "seq=42", "boot=0123456789abcdef")
	f.Add("site=", "time=-1", "seq=18446744073709551615", "boot=ffffffffffffffff")
	f.Add("x", "=", "time==", "boot")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		h, err := ParseHeartbeat([]string{a, b, c, d})
		if err != nil {
			return
		}
		again, err := ParseHeartbeat(h.TXT())
		if err != nil || again != h {
			t.Fatalf("%+v wrote %q, which reads %+v, %v", h, h.TXT(), again, err)
		}
	})
}
