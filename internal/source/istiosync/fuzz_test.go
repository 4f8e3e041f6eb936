package istiosync

import (
	"encoding/json"
	"testing"
)

// FuzzParse feeds arbitrary bodies to Parse: it must never panic, what it accepts must be
// valid JSON, and every proxy it returns has an id and a verdict Synced can give.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		legacyBody,
		csdsBody,
		`[{"proxy":"gw.ns","route_sent":"a","route_acked":"b"}]`,
		`{"resources":[{"node":{"id":"a~b~c.d~e"},"generic_xds_configs":[{"type_url":"type.googleapis.com/envoy.config.cluster.v3.Cluster","config_status":4}]}]}`,
		`{"resources":[{"node":{"id":"~~"},"genericXdsConfigs":[{"configStatus":null}]}]}`,
		`{}`, `[]`, ``, `null`, `{"resources":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		status, err := Parse(body)
		if err != nil {
			return
		}
		if status == nil || !json.Valid(body) {
			t.Fatalf("accepted %q as %v", body, status)
		}
		for id, p := range status {
			if id == "" {
				t.Fatalf("a proxy without an id from %q", body)
			}
			if ok, reason := p.Synced(); reason == "" {
				t.Fatalf("Synced() of %s = %v with no reason", id, ok)
			}
		}
	})
}
