package main

import (
	"fmt"
	"slices"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// geoRecord sends US clients to 10.0.0.1 and French ones to 10.0.0.2.
const geoRecord = `
records:
  geo.example.org.:
    mode: geoip
    record_ttl: 300
    backends:
      - {address: 10.0.0.1, country: US}
      - {address: 10.0.0.2, country: FR}
`

// serveGeo starts meridian with geoRecord, a city database that places 198.51.100.0/24 in San
// Jose and 203.0.113.0/24 in Paris, and extra Corefile lines in the gslb block.
func serveGeo(t *testing.T, extra string) *testutil.Server {
	t.Helper()
	city := testutil.WriteCityDB(t, []testutil.GeoNetwork{
		{Prefix: "198.51.100.0/24", City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.33, Lon: -121.89},
		{Prefix: "203.0.113.0/24", City: "Paris", Subdivision: "IDF", Country: "FR", Continent: "EU", Lat: 48.85, Lon: 2.35},
	})
	return serveZone(t, geoRecord, fmt.Sprintf("  use_edns_csubnet\n  geoip_maxmind city_db %s\n%s", city, extra))
}

func TestGeoAnswersFollowTheClientSubnet(t *testing.T) {
	s := serveGeo(t, "")
	tests := []struct {
		subnet string
		want   string
		scope  uint8
	}{
		{"198.51.100.0/24", "10.0.0.1", 24},
		{"198.51.100.9/32", "10.0.0.1", 24}, // the database's network decides, not the client's prefix
		{"203.0.113.0/24", "10.0.0.2", 24},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tt := range tests {
			m := new(dns.Msg)
			m.SetQuestion("geo.example.org.", dns.TypeA)
			m.SetEdns0(1232, false)
			if err := testutil.AddECS(m, tt.subnet); err != nil {
				t.Fatal(err)
			}
			r := s.Exchange(t, network, m)
			if got := addresses(r); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("%s client %s: answer %v, want %s", network, tt.subnet, got, tt.want)
			}
			var scope = -1
			if opt := r.IsEdns0(); opt != nil {
				for _, o := range opt.Option {
					if e, ok := o.(*dns.EDNS0_SUBNET); ok {
						scope = int(e.SourceScope)
					}
				}
			}
			if scope != int(tt.scope) {
				t.Errorf("%s client %s: ECS scope %d, want %d", network, tt.subnet, scope, tt.scope)
			}
		}
	}
}
