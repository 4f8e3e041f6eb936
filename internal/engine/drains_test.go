package engine

import (
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

func TestCatalogOverridesAndDrainStarts(t *testing.T) {
	now := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	list := []overlay.Override{
		{Key: "a", Action: overlay.Enable},
		{Key: "b", Action: overlay.Disable},
		{Key: "c", Action: overlay.Drain},
		{Key: "d", Action: overlay.ForceUp},
		{Key: "e", Action: overlay.Drain, Starts: now.Add(time.Minute)},
		{Key: "f", Action: overlay.Drain, Starts: now},
	}
	got, drains := CatalogOverrides(list, now), DrainStarts(list, now)
	want := map[string]catalog.Override{"a": catalog.ForceEnable, "b": catalog.ForceDisable, "c": catalog.ForceDisable,
		"d": catalog.ForceUp, "f": catalog.ForceDisable}
	if len(got) != len(want) {
		t.Fatalf("overrides %v, want %v", got, want)
	}
	for k, o := range want {
		if got[k] != o {
			t.Errorf("%s: %v, want %v", k, got[k], o)
		}
	}
	if len(drains) != 1 || !drains["e"].Equal(now.Add(time.Minute)) {
		t.Errorf("drain starts %v, want only e's, pending", drains)
	}
}
