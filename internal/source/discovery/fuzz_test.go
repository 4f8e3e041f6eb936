package discovery

import (
	"encoding/json"
	"testing"
)

// FuzzHTTPList feeds arbitrary bodies to the http source's list parsing: it must never panic,
// and what it accepts must be plain IP addresses (no zone, IPv4 unmapped) with their ports.
func FuzzHTTPList(f *testing.F) {
	for _, seed := range []string{
		`["10.0.0.1", "2001:db8::1"]`,
		`[{"address": "10.0.0.1", "port": 8080}, "10.0.0.2"]`,
		`[{"address": "::ffff:10.0.0.3", "port": 65535}]`,
		`[{"address": "fe80::1%eth0"}]`,
		`[{"address": "10.0.0.1", "port": -1}]`,
		`[1, true, null, {}]`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var items []json.RawMessage
		if json.Unmarshal(body, &items) != nil {
			return
		}
		eps, err := httpEndpoints(items)
		if err != nil {
			return
		}
		if len(eps) != len(items) {
			t.Fatalf("%d endpoints of %d items", len(eps), len(items))
		}
		for _, ep := range eps {
			if !ep.IP.IsValid() || ep.IP.Zone() != "" || ep.IP.Is4In6() {
				t.Fatalf("accepted %v from %q", ep, body)
			}
		}
	})
}
