package heartbeats

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRecordRoundTrip writes heartbeats and reads them back: long address lists span several
// strings of at most 255 bytes, the delegation's fields are optional, and malformed ones are
// refused.
func TestRecordRoundTrip(t *testing.T) {
	many := make([]netip.Addr, 60)
	for i := range many {
		many[i] = netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", i+1))
	}
	slices.SortFunc(many, netip.Addr.Compare)
	at := time.Date(2026, 12, 1, 11, 2, 3, 123e6, time.UTC)
	for _, r := range []Record{
		{Site: "eu-1", Region: "europe", Time: at, Up: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, Total: 2},
		{Site: "eu-1", Region: "europe", Time: at, Total: 3},
		{Site: "us-1", Region: "america", Time: at, Up: many, Total: 61, NS: "ns-us-1.gslb.example.com.", Glue: []netip.Addr{netip.MustParseAddr("198.51.100.53")}},
	} {
		txt := r.TXT()
		for _, s := range txt {
			if len(s) > maxString {
				t.Fatalf("a string of %d bytes: %q", len(s), s)
			}
		}
		got, err := ParseRecord(txt)
		if err != nil || got.Site != r.Site || got.Region != r.Region || !got.Time.Equal(r.Time) || !slices.Equal(got.Up, r.Up) ||
			got.Total != r.Total || got.NS != r.NS || !slices.Equal(got.Glue, r.Glue) {
			t.Fatalf("ParseRecord(%q) = %+v, %v; want %+v", txt, got, err, r)
		}
	}
	good := Record{Site: "eu-1", Region: "europe", Time: at, Up: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, Total: 1}.TXT()
	replace := func(key, value string) []string {
		out := slices.Clone(good)
		for i, s := range out {
			if strings.HasPrefix(s, key+"=") {
				out[i] = key + "=" + value
			}
		}
		return out
	}
	for name, txt := range map[string][]string{
		"version 2":        replace("v", "2"),
		"bad time":         replace("time", "yesterday"),
		"count mismatch":   replace("healthy", "2/2"),
		"more up than all": replace("healthy", "1/0"),
		"bad address":      replace("up", "192.0.2.300"),
		"no site":          slices.DeleteFunc(slices.Clone(good), func(s string) bool { return strings.HasPrefix(s, "site=") }),
		"twice":            append(slices.Clone(good), "site=us-1"),
	} {
		if _, err := ParseRecord(txt); err == nil {
			t.Errorf("%s: %q parsed", name, txt)
		}
	}
}

// FuzzParseRecord: a heartbeat read from a shared zone is untrusted; parsing never panics, and
// what parses writes back to a record that parses the same.
func FuzzParseRecord(f *testing.F) {
	f.Add("v=1", "site=eu-1", "region=europe", "time=2026-12-01T11:02:03.123Z", "healthy=1/2", "up=192.0.2.1")
	f.Add("v=1", "site=", "region=", "time=0001-01-01T00:00:00.000Z", "healthy=0/0", "up=")
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g string) {
		r, err := ParseRecord([]string{a, b, c, d, e, g})
		if err != nil {
			return
		}
		again, err := ParseRecord(r.TXT())
		if err != nil || again.Site != r.Site || !again.Time.Equal(r.Time) || !slices.Equal(again.Up, r.Up) || again.Total != r.Total {
			t.Fatalf("%+v wrote %q, which reads %+v, %v", r, r.TXT(), again, err)
		}
	})
}
