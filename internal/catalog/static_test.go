package catalog

import (
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

// TestStaticConflictsWithSourceRecords: a record a source adds (a Kubernetes annotation's, say)
// that the zone file's static data excludes fails the build, which keeps the snapshot serving.
func TestStaticConflictsWithSourceRecords(t *testing.T) {
	const yml = "static:\n  mail: [\"A 192.0.2.25\"]\n  sub: [\"NS ns1.sub\"]\n  ns1.sub: [\"A 192.0.2.53\"]\nrecords:\n  www.example.org.: {backends: [{address: 192.0.2.10}]}\n"
	for _, tt := range []struct{ record, want string }{
		{"mail.example.org.", "zone example.org.: the record mail.example.org. shares its name with static A, AAAA or CNAME records"},
		{"app.sub.example.org.", "zone example.org.: the record app.sub.example.org. is at or below the delegation sub.example.org."},
		{"other.example.org.", ""},
	} {
		z := mustZone(t, "example.org", yml)
		z.Records = append(z.Records, config.Record{Name: tt.record, Backends: []config.Backend{{Address: "192.0.2.99"}}})
		_, err := Build([]*config.Zone{z}, states{})
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.record, err, tt.want)
		}
	}
}

// TestStaticAddresses: Find gives a static name's A and AAAA RRsets in wire form, each record's
// TTL and address in zone order, and none for a name without them.
func TestStaticAddresses(t *testing.T) {
	const yml = "static:\n  mail: [\"300 A 192.0.2.25\", \"300 A 192.0.2.26\", \"AAAA 2001:db8::25\"]\n  txt: [\"TXT hello\"]\n"
	snap, err := Build([]*config.Zone{mustZone(t, "example.org", yml)}, states{})
	if err != nil {
		t.Fatal(err)
	}
	z := snap.ZoneOf("example.org.")
	v6 := "\x00\x00\x0e\x10\x20\x01\x0d\xb8" + strings.Repeat("\x00", 11) + "\x25" // the zone's TTL, 3600
	for _, tt := range []struct {
		name string
		f    Family
		want string
		n    int
	}{
		{"mail.example.org.", IPv4, "\x00\x00\x01\x2c\xc0\x00\x02\x19" + "\x00\x00\x01\x2c\xc0\x00\x02\x1a", 2},
		{"mail.example.org.", IPv6, v6, 1},
		{"txt.example.org.", IPv4, "", 0},
		{"example.org.", IPv6, "", 0},
	} {
		wire, n := z.Find(tt.name).Addresses.Records(tt.f)
		if string(wire) != tt.want || n != tt.n {
			t.Errorf("%s family %d: % x (%d records), want % x (%d)", tt.name, tt.f, wire, n, tt.want, tt.n)
		}
	}
}
