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
