package admin

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"testing"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

func TestClient(t *testing.T) {
	p := exampleProvider()
	_, base := startServer(t, Config{BasicUser: "ops", BasicPass: "pw"}, nil, p)
	ctx := context.Background()

	anonymous := &Client{BaseURL: base}
	_, err := anonymous.Zones(ctx)
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Code != http.StatusUnauthorized || se.Message != "Unauthorized" {
		t.Fatalf("without credentials: %v", err)
	}

	c := &Client{BaseURL: base + "/", User: "ops", Password: "pw"}
	zones, err := c.Zones(ctx)
	if err != nil || len(zones) != 1 {
		t.Fatalf("Zones: %v, %v", zones, err)
	}
	down, err := c.Backends(ctx, Selector{Zone: "example.org"}, StateDown)
	if err != nil || len(down) != 1 || down[0].Address != "10.1.0.5" {
		t.Fatalf("Backends: %+v, %v", down, err)
	}
	res, err := c.Act(ctx, overlay.Drain, ActionRequest{Selector: Selector{Tags: []string{"hdd"}}, Duration: "1h", Reason: "disk"})
	if err != nil || len(res.Backends) != 1 || res.Expires.IsZero() {
		t.Fatalf("Act: %+v, %v", res, err)
	}
	hdd, _ := c.Backends(ctx, Selector{Tags: []string{"hdd"}}, "")
	if o := hdd[0].Override; o == nil || o.By != "ops" || o.Action != overlay.Drain {
		t.Fatalf("override after Act: %+v", o)
	}
	_, err = c.Act(ctx, overlay.Disable, ActionRequest{Selector: Selector{Location: "nowhere"}})
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Code != http.StatusUnprocessableEntity {
		t.Fatalf("Act matching nothing: %v", err)
	}

	exp, err := c.Explain(ctx, Query{Name: "www.example.org", Client: netip.MustParseAddr("192.0.2.1"), ECS: netip.MustParsePrefix("198.51.100.0/24")})
	if err != nil || exp.Query.Type != "A" || exp.Query.Client.String() != "192.0.2.1" || exp.Query.ECS.String() != "198.51.100.0/24" {
		t.Fatalf("Explain: %+v, %v", exp, err)
	}

	if r, err := c.Reload(ctx); err != nil || !r.OK {
		t.Fatalf("Reload: %+v, %v", r, err)
	}
	p.reloadErr = errors.New("zone file is invalid")
	r, err := c.Reload(ctx)
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Code != http.StatusUnprocessableEntity || r.OK || r.Blocks[0].Error != "zone file is invalid" {
		t.Fatalf("failed Reload: %+v, %v", r, err)
	}

	if _, err := (&Client{BaseURL: "http://127.0.0.1:1"}).Zones(ctx); err == nil {
		t.Fatal("no error from a closed port")
	}
}
