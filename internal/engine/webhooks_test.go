package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/notify/notifytest"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestWebhooksFollowTheEngine checks the engine's events end to end: a probed backend's
// transitions and an override of the admin API reach the block's webhook, signed; a reload to
// another URL sends the next events there only.
func TestWebhooksFollowTheEngine(t *testing.T) {
	site, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	go func() {
		for {
			c, err := site.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dir := t.TempDir()
	file := filepath.Join(dir, "zone.yml")
	yaml := fmt.Sprintf(`records:
  www.example.org.:
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends: [{address: 127.0.0.1, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}]
`, site.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "www.example.org.|127.0.0.1|0"
	first, second := notifytest.NewReceiver(t), notifytest.NewReceiver(t)
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	opts.MaxStaggerStart = 0
	opts = withAPI(t, opts, dir)
	opts.Webhooks.URLs, opts.Webhooks.Secret = []string{first.URL}, "s3cret"
	r := NewRegistry()
	e := open(t, r, newLoad(), opts)
	start(t, e)

	wait := func(rcv *notifytest.Receiver, typ string, n int) notify.Event {
		t.Helper()
		testutil.Eventually(t, 5*time.Second, func() bool { return len(rcv.Events(typ)) >= n }, "%d %s events, want %d", len(rcv.Events(typ)), typ, n)
		req := rcv.Events(typ)[n-1]
		if !notify.Verify("s3cret", req.Body, req.Header.Get(notify.SignatureHeader)) {
			t.Errorf("the signature of %s does not verify", req.Body)
		}
		return req.Event
	}
	if ev := wait(first, "transition", 1); ev.Key != key || ev.From != "unknown" || ev.To != "up" || ev.Record != "www.example.org." || ev.Backend != "127.0.0.1" {
		t.Errorf("first transition %+v", ev)
	}
	ctx := context.Background()
	if err := e.api.store.Apply(ctx, []overlay.Change{{Key: key, Action: overlay.Drain, Reason: "maint", By: "ops"}}); err != nil {
		t.Fatal(err)
	}
	if ev := wait(first, "override", 1); ev.Key != key || ev.Change != "set" || ev.Action != "drain" || ev.Reason != "maint" || ev.By != "ops" || ev.Record != "www.example.org." {
		t.Errorf("override %+v", ev)
	}

	// A reload to another URL: the new load starts, then the old one stops.
	opts.Webhooks.URLs = []string{second.URL}
	next := open(t, r, newLoad(), opts)
	start(t, next)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	sent := len(first.Requests())
	site.Close()
	if ev := wait(second, "transition", 1); ev.From != "up" || ev.To != "down" || ev.Reason == "" {
		t.Errorf("transition after the reload %+v", ev)
	}
	if err := next.api.store.Apply(ctx, []overlay.Change{{Key: key, Action: overlay.Clear}}); err != nil {
		t.Fatal(err)
	}
	if ev := wait(second, "override", 1); ev.Change != "cleared" || ev.Action != "drain" {
		t.Errorf("override after the reload %+v", ev)
	}
	if got := len(first.Requests()); got != sent {
		t.Errorf("the URL of the previous load got %d more requests", got-sent)
	}
	if got := len(second.Events("override")); got != 1 {
		t.Errorf("%d override events after the reload, want 1 (the stopped engine sends none)", got)
	}
}
