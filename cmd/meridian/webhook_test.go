package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/notify/notifytest"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestWebhookEndToEnd serves the failover record of the admin tests with a webhook to a
// loopback receiver: a backend that goes down, and an override of the admin API, each reach it
// as a signed event.
func TestWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	const secret = "e2e s3cret"
	rcv := notifytest.NewReceiver(t)
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	s := startWithAPI(t, wwwZone(primary, secondary), filepath.Join(t.TempDir(), "overrides.json"),
		"webhook "+rcv.URL+"/hook", `webhook_secret "`+secret+`"`, "webhook_timeout 2s")

	// event waits for an event of typ that match accepts, checks its signature and headers,
	// and returns it.
	event := func(typ string, match func(notify.Event) bool) notify.Event {
		t.Helper()
		var found *notifytest.Request
		testutil.Eventually(t, 10*time.Second, func() bool {
			for _, req := range rcv.Events(typ) {
				if match(req.Event) {
					found = &req
					return true
				}
			}
			return false
		}, "no matching %s event among %d requests\n%s", typ, len(rcv.Requests()), s.Logs())
		if !notify.Verify(secret, found.Body, found.Header.Get(notify.SignatureHeader)) {
			t.Errorf("the signature %q of %s does not verify", found.Header.Get(notify.SignatureHeader), found.Body)
		}
		if found.Header.Get(notify.EventHeader) != typ || found.Header.Get(notify.DeliveryHeader) != found.Event.ID {
			t.Errorf("headers %v of %s", found.Header, found.Body)
		}
		return found.Event
	}

	up := event("transition", func(ev notify.Event) bool { return ev.Key == primaryKey && ev.To == "up" })
	if up.Record != "www.example.org." || up.Backend != "127.0.0.1" || up.Instance == "" {
		t.Errorf("transition to up: %+v", up)
	}
	primary.fail()
	down := event("transition", func(ev notify.Event) bool { return ev.Key == primaryKey && ev.To == "down" })
	if down.From != "up" || down.Reason == "" || !down.Time.After(up.Time) {
		t.Errorf("transition to down: %+v (after %+v)", down, up)
	}

	res, err := s.client.Act(context.Background(), overlay.Disable, admin.ActionRequest{Selector: admin.Selector{Keys: []string{secondaryKey}}, Reason: "e2e"})
	if err != nil || len(res.Backends) != 1 {
		t.Fatalf("disable: %+v, %v", res, err)
	}
	ov := event("override", func(ev notify.Event) bool { return ev.Key == secondaryKey })
	if ov.Change != "set" || ov.Action != "disable" || ov.Reason != "e2e" || ov.Record != "www.example.org." || ov.Backend != "127.0.0.2" || ov.Set.IsZero() {
		t.Errorf("override: %+v", ov)
	}
}
