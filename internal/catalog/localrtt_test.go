package catalog

import (
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
