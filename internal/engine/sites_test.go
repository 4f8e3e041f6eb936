package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/source/sites"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestSitesSurviveAReload: a block with a site serves its heartbeat from its first snapshot;
// the engine of a Corefile reload takes the same fleet, whose heartbeat keeps ticking while
// the old engine stops, and the last engine's stop ends it.
func TestSitesSurviveAReload(t *testing.T) {
	r := NewRegistry()
	opts := blockOptions(t, t.TempDir(), "example.org.")
	opts.Sites.Site = "eu"
	first := open(t, r, newLoad(), opts)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	hb := first.Snapshot().Heartbeat()
	if hb == nil || hb.Label() != "heartbeat-eu" || !strings.HasPrefix(strings.Join(hb.TXT(), " "), "site=eu ") {
		t.Fatalf("the first snapshot serves no heartbeat of eu: %v", hb)
	}
	second := open(t, r, newLoad(), opts)
	start(t, second)
	fleet := func(e *Engine) *sites.Fleet { f, _ := instanceOf[*sites.Fleet](e); return f }
	if second.Snapshot().Heartbeat() != hb || fleet(second) != fleet(first) {
		t.Fatal("the reload's engine has a fleet of its own")
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	was := strings.Join(hb.TXT(), " ")
	testutil.Eventually(t, 3*time.Second, func() bool { return strings.Join(hb.TXT(), " ") != was },
		"the heartbeat stopped with the old engine: %v", hb.TXT())
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	was = strings.Join(hb.TXT(), " ")
	time.Sleep(1500 * time.Millisecond) // a tick and a half: nothing may tick any more
	if now := strings.Join(hb.TXT(), " "); now != was {
		t.Errorf("the heartbeat ticks after the last engine stopped: %s, then %s", was, now)
	}
}

// TestPlaceholdersNeedASite: a backend with a site and no address, in a block that names no
// site of its own, is an error naming its file and line, at load and in Check.
func TestPlaceholdersNeedASite(t *testing.T) {
	dir := t.TempDir()
	opts := blockOptions(t, dir, "example.org.")
	file := opts.Zones[0].File
	if err := os.WriteFile(file, []byte("records:\n  www.example.org.:\n    backends:\n      - {address: 192.0.2.1}\n      - {site: us}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Base(file) + ":5:"
	if _, err := New(opts, &testutil.Log{}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "site us") {
		t.Errorf("New: %v, want an error at %s about site us", err, want)
	}
	if _, _, err := Check(opts); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check: %v, want an error at %s", err, want)
	}
	opts.Sites.Site = "eu"
	if _, _, err := Check(opts); err != nil {
		t.Errorf("Check with a site: %v", err)
	}
}

// TestAFailedReloadKeepsTheSitesOptions: a Corefile reload whose files do not load leaves the
// fleet with the serving engine's options (it outlives reloads, and a failed load must not
// change it).
func TestAFailedReloadKeepsTheSitesOptions(t *testing.T) {
	r := NewRegistry()
	opts := blockOptions(t, t.TempDir(), "example.org.")
	opts.Sites.Site, opts.Sites.PeerInterval = "eu", time.Second
	serving := open(t, r, newLoad(), opts)
	start(t, serving)
	bad := opts // the same block (the same fleet), whose file no longer loads
	bad.Sites.PeerInterval = 5 * time.Second
	if err := os.WriteFile(opts.Zones[0].File, []byte("records: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(newLoad(), bad, &testutil.Log{}); err == nil {
		t.Fatal("a load of a broken file succeeded")
	}
	if got := serving.Sites().PeerInterval; got != time.Second {
		t.Errorf("after a failed reload the fleet reads every %s, want the serving engine's 1s", got)
	}
}
