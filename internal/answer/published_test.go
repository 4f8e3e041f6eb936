package answer

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/published"
)

// publishingSnapshot compiles a zone in which app publishes its local backends (as the sites
// source marks them), with a wildcard and an operator's own localtargets-own record, and the
// heartbeat of site us.
func publishingSnapshot(t testing.TB) *catalog.Snapshot {
	t.Helper()
	z, hs := publishingZone(t)
	snap, err := catalog.Build([]*config.Zone{z}, hs)
	if err != nil {
		t.Fatal(err)
	}
	return withHeartbeat(snap)
}

// withHeartbeat gives snap the heartbeat of site us and returns it.
func withHeartbeat(snap *catalog.Snapshot) *catalog.Snapshot {
	hb := published.NewServed("us")
	hb.Set([]string{"site=us", "time=1", "seq=1", "boot=0123456789abcdef"})
	snap.SetHeartbeat(hb)
	return snap
}

// publishingZone is publishingSnapshot's zone, and its health words.
func publishingZone(t testing.TB) (*config.Zone, states) {
	t.Helper()
	z, err := config.ParseZone("example.org.yml", []byte(`
records:
  app.example.org.:
    backends:
      - {address: 10.0.0.1, site: eu}
      - {address: 10.0.0.2, site: us}
      - {address: "2001:db8::2", site: us}
  other.example.org.: {backends: [{address: 10.0.0.9, site: eu}]}
  "*.example.org.": {backends: [{address: 10.0.0.7}]}
  localtargets-own.example.org.: {backends: [{address: 10.0.0.8}]}
  fast.example.org.:
    mode: chain
    chain: [rtt]
    backends:
      - {address: 10.0.1.1, site: eu}
      - {address: 10.0.1.2, site: us, healthchecks: [{type: tcp, params: {port: 9}}]}
`), "example.org.", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range z.Records {
		r := &z.Records[i]
		for j := range r.Backends {
			remote := r.Backends[j].Site() == "eu"
			r.Backends[j].Remote, r.Backends[j].External = remote, remote
			r.Publish = r.Publish || r.Backends[j].Site() != "eu"
		}
		r.PublishRTT = r.SteersByRTT()
	}
	hs := states{}
	hs.State("fast.example.org.|10.0.1.1|0").SetRTT(80 * time.Millisecond)   // measured, not judged, here
	hs.State("fast.example.org.|10.0.1.2|0").SetRTT(1500 * time.Microsecond) // probed, as a backend of ours must be to have an RTT
	return z, hs
}

// TestPublishedNames answers localtargets-<record> with this site's healthy backends and the
// heartbeat, leaves an operator's record of such a name alone, does not let a wildcard answer
// for an unpublished record, and refuses unsigned queries when a peer key is set.
func TestPublishedNames(t *testing.T) {
	snap := publishingSnapshot(t)
	tests := []struct {
		name    string
		qtype   uint16
		opts    Options
		signed  bool
		rcode   int
		answers []string
	}{
		{"localtargets-app.example.org.", dns.TypeA, Options{}, false, dns.RcodeSuccess, []string{"10.0.0.2"}},
		{"LocalTargets-App.example.org.", dns.TypeAAAA, Options{}, false, dns.RcodeSuccess, []string{"2001:db8::2"}},
		{"localtargets-app.example.org.", dns.TypeTXT, Options{}, false, dns.RcodeSuccess, nil},
		{"localtargets-other.example.org.", dns.TypeA, Options{}, false, dns.RcodeNameError, nil}, // no backend of us
		{"localtargets-nothing.example.org.", dns.TypeA, Options{}, false, dns.RcodeNameError, nil},
		{"localtargets-own.example.org.", dns.TypeA, Options{}, false, dns.RcodeSuccess, []string{"10.0.0.8"}},
		{"heartbeat-us.example.org.", dns.TypeTXT, Options{}, false, dns.RcodeSuccess, []string{"site=us time=1 seq=1 boot=0123456789abcdef"}},
		{"heartbeat-us.example.org.", dns.TypeA, Options{}, false, dns.RcodeSuccess, nil},
		{"heartbeat-eu.example.org.", dns.TypeA, Options{}, false, dns.RcodeSuccess, []string{"10.0.0.7"}}, // not ours: the wildcard
		{"localrtt-fast.example.org.", dns.TypeTXT, Options{}, false, dns.RcodeSuccess, []string{"10.0.1.1=80ms", "10.0.1.2=1.5ms"}},
		{"LOCALRTT-fast.example.org.", dns.TypeANY, Options{}, false, dns.RcodeSuccess, []string{"10.0.1.1=80ms", "10.0.1.2=1.5ms"}},
		{"localrtt-fast.example.org.", dns.TypeA, Options{}, false, dns.RcodeSuccess, nil},
		{"localrtt-app.example.org.", dns.TypeTXT, Options{}, false, dns.RcodeNameError, nil}, // does not steer by RTT
		{"localrtt-nothing.example.org.", dns.TypeTXT, Options{}, false, dns.RcodeNameError, nil},
		{"localrtt-fast.example.org.", dns.TypeTXT, Options{PeerKey: true}, false, dns.RcodeRefused, nil},
		{"localrtt-fast.example.org.", dns.TypeTXT, Options{PeerKey: true}, true, dns.RcodeSuccess, []string{"10.0.1.1=80ms", "10.0.1.2=1.5ms"}},
		{"localtargets-app.example.org.", dns.TypeA, Options{PeerKey: true}, false, dns.RcodeRefused, nil},
		{"heartbeat-us.example.org.", dns.TypeTXT, Options{PeerKey: true}, false, dns.RcodeRefused, nil},
		{"localtargets-app.example.org.", dns.TypeA, Options{PeerKey: true}, true, dns.RcodeSuccess, []string{"10.0.0.2"}},
		{"app.example.org.", dns.TypeA, Options{PeerKey: true}, false, dns.RcodeSuccess, []string{"10.0.0.2"}}, // eu's is not known yet
	}
	for _, tt := range tests {
		m := new(dns.Msg)
		m.SetQuestion(tt.name, tt.qtype)
		resp, _ := Respond(snap, tt.opts, Query{Msg: m, Signed: tt.signed})
		if resp.Rcode != tt.rcode {
			t.Errorf("%s %s: rcode %s, want %s", tt.name, dns.TypeToString[tt.qtype], dns.RcodeToString[resp.Rcode], dns.RcodeToString[tt.rcode])
			continue
		}
		if got := answerStrings(resp); !slices.Equal(got, tt.answers) {
			t.Errorf("%s %s: answers %v, want %v", tt.name, dns.TypeToString[tt.qtype], got, tt.answers)
		}
		if tt.rcode == dns.RcodeSuccess && len(tt.answers) == 0 && len(resp.Ns) != 1 {
			t.Errorf("%s %s: NODATA without the SOA", tt.name, dns.TypeToString[tt.qtype])
		}
	}
}

// answerStrings returns the data of each answer record: the address, or the TXT strings.
func answerStrings(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch x := rr.(type) {
		case *dns.A:
			out = append(out, x.A.String())
		case *dns.AAAA:
			out = append(out, x.AAAA.String())
		case *dns.TXT:
			s := ""
			for i, t := range x.Txt {
				if i > 0 {
					s += " "
				}
				s += t
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// TestExplainSites: explanations name the site of each backend, say when stale targets are
// answered (degraded) or a failover is in progress, and what a published name is.
func TestExplainSites(t *testing.T) {
	snap := publishingSnapshot(t)
	var app *catalog.Record
	for _, r := range snap.Records() {
		if r.Name() == "app.example.org." {
			app = r
		}
	}
	for _, b := range app.Backends {
		if b.Config.Remote {
			b.State.Set(health.Stale)
		} else {
			b.SetOverride(catalog.ForceDisable)
		}
	}
	app.Refresh()
	ask := func(name string, qtype uint16, opts Options) string {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		return Explain(snap, opts, Query{Msg: m}).String()
	}
	for _, tt := range []struct {
		name  string
		qtype uint16
		opts  Options
		want  []string
	}{
		{"app.example.org.", dns.TypeA, Options{}, []string{"stale (site eu's, as it publishes)", "up (site us, this site) (not probed), disabled by an operator", "IPv4: degraded", "[10.0.0.1]"}},
		{"localtargets-app.example.org.", dns.TypeA, Options{}, []string{"published for the peers: this site's healthy backends of app.example.org."}},
		{"heartbeat-us.example.org.", dns.TypeTXT, Options{PeerKey: true}, []string{"refused, the query is not signed"}},
		{"localrtt-fast.example.org.", dns.TypeTXT, Options{}, []string{"this site's RTTs to the backends of fast.example.org. (measure_remote, TTL 0)"}},
	} {
		got := ask(tt.name, tt.qtype, tt.opts)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("explain %s does not say %q:\n%s", tt.name, w, got)
			}
		}
	}
}

// BenchmarkRespondSites measures the query path of a site: a record with other sites'
// backends, and the published names its peers ask for. The allocations are the response's.
func BenchmarkRespondSites(b *testing.B) {
	snap := publishingSnapshot(b)
	for _, c := range []struct {
		name, qname string
		qtype       uint16
	}{
		{"record/A", "app.example.org.", dns.TypeA},
		{"localtargets/A", "localtargets-app.example.org.", dns.TypeA},
		{"heartbeat/TXT", "heartbeat-us.example.org.", dns.TypeTXT},
	} {
		q := new(dns.Msg)
		q.SetQuestion(c.qname, c.qtype)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m, _ := Respond(snap, Options{}, Query{Msg: q, Source: testClient}); m == nil || len(m.Answer) == 0 {
					b.Fatal("no answer")
				}
			}
		})
	}
}

// FuzzRespondSites is FuzzRespond on a site's snapshot, whose published names answer (or
// refuse) too.
func FuzzRespondSites(f *testing.F) {
	snap := publishingSnapshot(f)
	for _, name := range []string{"localtargets-app.example.org.", "heartbeat-us.example.org.", "localtargets-.example.org.", "app.example.org."} {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeTXT)
		wire, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(wire, false, true, false)
	}
	f.Fuzz(func(t *testing.T, wire []byte, tcp, peerKey, signed bool) {
		req := new(dns.Msg)
		if err := req.Unpack(wire); err != nil {
			return
		}
		m, res := Respond(snap, Options{PeerKey: peerKey}, Query{Msg: req, Source: testClient, TCP: tcp, Signed: signed})
		if res == NotOurs {
			return
		}
		if _, err := m.Pack(); err != nil {
			t.Fatalf("response does not pack: %v\n%v", err, m)
		}
	})
}
