package heartbeats

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestKeepDS: with a signed zone, the delegation keeper sets the parent's DS set (in BIND and
// in Knot, by TSIG-signed updates) to the one the zone's keys call for, replaces it when they
// change, and leaves alone the DS of a zone it does not sign.
func TestKeepDS(t *testing.T) {
	key := testutil.TSIGKey{Name: "hb-key.", Algorithm: dns.HmacSHA256, Secret: "c2l0ZXMtc2hhcmVkLXNlY3JldC1vZi0zMi1ieXRlcyE="}
	dir := t.TempDir()
	k1 := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.example.", KSK: true})
	k2 := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.example.", KSK: true})
	other := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "other.example.", KSK: true})
	parent := []string{"gslb NS ns1.gslb", "ns1.gslb A 192.0.2.53", "other NS ns1.other", other.DS(60)}
	for _, start := range []func(testing.TB, testutil.TSIGKey, map[string][]string) *testutil.UpdateServer{testutil.StartBIND, testutil.StartKnot} {
		srv := start(t, key, map[string][]string{"example.": parent})
		t.Run(srv.Kind, func(t *testing.T) {
			opts := config.HeartbeatOptions{Local: &config.HeartbeatZone{Zone: "hb.example."}, Interval: time.Second,
				TSIG:       &config.TSIGKey{Name: key.Name, Algorithm: key.Algorithm, Secret: key.Secret},
				Delegation: &config.Delegation{Parent: "example.", Servers: []string{srv.Addr}, NS: "ns1.gslb.example."}}
			k := NewKeeper("eu-1", opts, recorder{}, nil)
			log := &testutil.Log{}
			k.Configure(opts, []string{"gslb.example.", "other.example."}, nil, log)
			want := []*dns.DS{k1.DNSKEY.ToDS(dns.SHA256)}
			k.KeepDS(func(origin string) ([]*dns.DS, bool) { return want, origin == "gslb.example." })
			u := updater{key: opts.TSIG, timeout: 2 * time.Second}
			tags := func(name string) []uint16 {
				var out []uint16
				for _, rr := range srv.Query(t, name, dns.TypeDS).Answer {
					if ds, ok := rr.(*dns.DS); ok {
						out = append(out, ds.KeyTag)
					}
				}
				slices.Sort(out)
				return out
			}
			k.keepDelegation(context.Background(), u, false)
			if got := tags("gslb.example."); !slices.Equal(got, []uint16{k1.DNSKEY.KeyTag()}) {
				t.Errorf("the parent's DS: %v, want the first key's", got)
			}
			want = append(want, k2.DNSKEY.ToDS(dns.SHA256))
			k.keepDelegation(context.Background(), u, false)
			wantTags := []uint16{k1.DNSKEY.KeyTag(), k2.DNSKEY.KeyTag()}
			slices.Sort(wantTags)
			if got := tags("gslb.example."); !slices.Equal(got, wantTags) {
				t.Errorf("after a KSK was added, the parent's DS: %v, want %v", got, wantTags)
			}
			want = want[1:]
			k.keepDelegation(context.Background(), u, false)
			if got := tags("gslb.example."); !slices.Equal(got, []uint16{k2.DNSKEY.KeyTag()}) {
				t.Errorf("after the first KSK left, the parent's DS: %v, want the second key's", got)
			}
			if got := tags("other.example."); !slices.Equal(got, []uint16{other.DNSKEY.KeyTag()}) {
				t.Errorf("the DS of a zone the keeper does not sign changed: %v", got)
			}
			k.keepDelegation(context.Background(), u, false)
			if n := log.Count("set the DS"); n != 3 {
				t.Errorf("%d DS updates logged, want 3 (none once the parent holds the set):\n%s", n, log)
			}
		})
	}
}
