package catalog

import (
	"slices"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// sitesRecord compiles a failover record with a local backend (priority 2, v4 and v6) and two
// of other sites (priorities 1 and 3), marked as the sites source marks them, publishing.
func sitesRecord(t *testing.T, hs states) *Record {
	t.Helper()
	z := mustZone(t, "example.org", `
records:
  app.example.org.:
    mode: failover
    backends:
      - {address: 10.0.0.1, priority: 1, site: eu, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.2, priority: 2, site: us, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: "2001:db8::2", priority: 2, site: us, healthchecks: [{type: tcp, params: {port: 80}}]}
      - {address: 10.0.0.3, priority: 3, site: ap, healthchecks: [{type: tcp, params: {port: 80}}]}
`)
	rc := &z.Records[0]
	rc.Publish = true
	for i := range rc.Backends {
		remote := rc.Backends[i].Site() != "us"
		rc.Backends[i].Remote, rc.Backends[i].External = remote, remote
	}
	snap, err := Build([]*config.Zone{z}, hs)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Records()[0]
}

// TestStaleTargetsServeOnlyWhenNothingElseIs: other sites' stale backends leave a family's
// answers while any backend of it is healthy, and are served (degraded) when none is; the
// failover flag says when the answer is not the best priority; localtargets carries this
// site's healthy backends only.
func TestStaleTargetsServeOnlyWhenNothingElseIs(t *testing.T) {
	key := func(ip string) string { return "app.example.org.|" + ip + "|0" }
	tests := []struct {
		name             string
		status           map[string]health.Status
		v4, v6           []string // the healthy set, in failover order
		degraded4        bool
		failover4        bool
		published4       []string
		published6Length int
	}{
		{"all up", map[string]health.Status{"10.0.0.1": health.Up, "10.0.0.2": health.Up, "2001:db8::2": health.Up, "10.0.0.3": health.Up},
			[]string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, []string{"2001:db8::2"}, false, false, []string{"10.0.0.2"}, 1},
		{"best site stale, local up", map[string]health.Status{"10.0.0.1": health.Stale, "10.0.0.2": health.Up, "2001:db8::2": health.Up, "10.0.0.3": health.Up},
			[]string{"10.0.0.2", "10.0.0.3"}, []string{"2001:db8::2"}, false, true, []string{"10.0.0.2"}, 1},
		{"local down, others stale", map[string]health.Status{"10.0.0.1": health.Stale, "10.0.0.2": health.Down, "2001:db8::2": health.Up, "10.0.0.3": health.Stale},
			[]string{"10.0.0.1", "10.0.0.3"}, []string{"2001:db8::2"}, true, false, nil, 1},
		{"stale and down", map[string]health.Status{"10.0.0.1": health.Down, "10.0.0.2": health.Down, "2001:db8::2": health.Down, "10.0.0.3": health.Stale},
			[]string{"10.0.0.3"}, nil, true, true, nil, 0},
		{"nothing stale, nothing up", map[string]health.Status{"10.0.0.1": health.Down, "10.0.0.2": health.Down, "2001:db8::2": health.Down, "10.0.0.3": health.Unknown},
			nil, nil, false, false, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := states{}
			for ip, st := range tt.status {
				hs.State(key(ip)).Set(st)
			}
			r := sitesRecord(t, hs)
			v := r.View()
			if got := addrs(v.Healthy[IPv4]); !slices.Equal(got, tt.v4) {
				t.Errorf("IPv4 serves %v, want %v", got, tt.v4)
			}
			if got := addrs(v.Healthy[IPv6]); !slices.Equal(got, tt.v6) {
				t.Errorf("IPv6 serves %v, want %v", got, tt.v6)
			}
			if v.Degraded[IPv4] != tt.degraded4 || v.Failover[IPv4] != tt.failover4 {
				t.Errorf("IPv4 degraded %v failover %v, want %v %v", v.Degraded[IPv4], v.Failover[IPv4], tt.degraded4, tt.failover4)
			}
			var pub []string
			for _, rr := range v.Extra().Published[IPv4] {
				if rr.Header().Name != "localtargets-app.example.org." {
					t.Errorf("published under %s", rr.Header().Name)
				}
				pub = append(pub, rr.(*dns.A).A.String())
			}
			if !slices.Equal(pub, tt.published4) || len(v.Extra().Published[IPv6]) != tt.published6Length {
				t.Errorf("published %v and %d AAAA, want %v and %d", pub, len(v.Extra().Published[IPv6]), tt.published4, tt.published6Length)
			}
		})
	}
}

func addrs(bs []*Backend) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Config.Address)
	}
	return out
}

// TestExternalLocalBackendsArePublished: a backend of this site whose health a source reports
// (a Kubernetes Service's address) is published in localtargets like a probed one; another
// site's is not.
func TestExternalLocalBackendsArePublished(t *testing.T) {
	z := mustZone(t, "example.org", `
records:
  app.example.org.:
    backends:
      - {address: 10.0.0.1}
      - {address: 10.0.0.2, site: eu}
`)
	rc := &z.Records[0]
	rc.Publish = true
	rc.Backends[0].External = true                              // this site's, judged by a source
	rc.Backends[1].External, rc.Backends[1].Remote = true, true // another site's
	hs := states{}
	for _, ip := range []string{"10.0.0.1", "10.0.0.2"} {
		hs.State("app.example.org.|" + ip + "|0").Set(health.Up)
	}
	snap, err := Build([]*config.Zone{z}, hs)
	if err != nil {
		t.Fatal(err)
	}
	pub := snap.Records()[0].View().Extra().Published[IPv4]
	if len(pub) != 1 || pub[0].(*dns.A).A.String() != "10.0.0.1" {
		t.Errorf("published %v, want this site's externally judged 10.0.0.1 only", pub)
	}
}
