package resigner

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/health"
	mtest "github.com/meridian-gslb/meridian/internal/testutil"
)

// words hands out a health word per key.
type words map[string]*health.State

func (w words) State(key string) *health.State {
	if w[key] == nil {
		w[key] = &health.State{}
	}
	return w[key]
}

// keySeries reports whether the key metric has the series of zone's key tag in state now.
func keySeries(t *testing.T, zone string, tag uint16, state string) bool {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "coredns_gslb_dnssec_key" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["zone"] == zone && labels["key_tag"] == strconv.Itoa(int(tag)) && labels["state"] == state && m.GetGauge().GetValue() == 1 {
				return true
			}
		}
	}
	return false
}

// TestRound: a round signs again what is due, logs the keys' changes of state and, once, a
// moment without an active key; the metrics show the keys in their states while the signer is
// tracked, and none after.
func TestRound(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second)
	var keys []*dnssec.Key
	for _, spec := range []mtest.KeySpec{
		{Zone: "example.org", KSK: true, Inactive: now.Add(time.Hour)},
		{Zone: "example.org", KSK: true, Publish: now, Activate: now.Add(time.Hour), Inactive: now.Add(2 * time.Hour)},
	} {
		k, err := dnssec.ReadKey(mtest.WriteKey(t, dir, spec).Base)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	ks, _ := dnssec.NewKeyset(keys)
	signer := dnssec.NewSigner("example.org.", ks, dnssec.Options{Validity: 14 * 24 * time.Hour, Refresh: 5 * 24 * time.Hour, KeyTTL: 60, CacheCapacity: 64})
	z, err := config.ParseZone("example.org.yml", []byte("records:\n  www.example.org.: {backends: [{address: 10.0.0.1}]}\n"), "example.org", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.BuildUnviewed([]*config.Zone{z}, words{})
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Sign(map[string]*dnssec.Signer{"example.org.": signer}, answer.ViewSigner{}, nil, now); err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Records() {
		r.Refresh()
	}
	log := &mtest.Log{}
	r := New(log)
	r.Configure(func() *catalog.Snapshot { return snap }, []*dnssec.Signer{signer})
	signer.Track() // as Start does
	defer signer.Untrack()

	r.Round(now)
	if !keySeries(t, "example.org.", keys[0].Tag, "active") || !keySeries(t, "example.org.", keys[1].Tag, "published") {
		t.Error("no series of the first key active and the second published")
	}
	if d := r.next(); d != maxRound {
		t.Errorf("next round in %s, want %s (the next key event is an hour away)", d, maxRound)
	}
	r.Round(now.Add(time.Hour))
	if log.Count("key "+strconv.Itoa(int(keys[1].Tag))+" (CSK ED25519) is now active") != 1 || log.Count("is now retired") != 1 {
		t.Errorf("the rollover is not logged:\n%s", log)
	}
	rrsig := snap.ZoneOf("example.org.").Signed().SOA.RRSIGs[0]
	if !strings.Contains(rrsig.String(), " "+strconv.Itoa(int(keys[1].Tag))+" example.org.") {
		t.Errorf("after the round at the event, the SOA is signed by %v", rrsig)
	}
	r.Round(now.Add(2 * time.Hour))
	r.Round(now.Add(3 * time.Hour))
	if n := log.Count("no key is active"); n != 1 {
		t.Errorf("%d errors for no active key, want 1:\n%s", n, log)
	}
	signer.Untrack()
	if keySeries(t, "example.org.", keys[0].Tag, "active") {
		t.Error("a signer no longer tracked keeps its series")
	}
}
