package probe

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
)

// TestRegistryMatchesConfig: the configuration loader accepts exactly the check types that
// have a prober. It keeps a list of its own, since it cannot import this package (which imports
// it), so a type added on one side only must fail here.
func TestRegistryMatchesConfig(t *testing.T) {
	registry := slices.Sorted(maps.Keys(constructors))
	if diff := typeSetDiff(registry, config.CheckTypes()); diff != "" {
		t.Fatal(diff)
	}
	// The comparison catches a type gained by either side.
	for _, gained := range []struct{ registry, config []string }{
		{append(slices.Clone(registry), "snmp"), config.CheckTypes()},
		{registry, append(config.CheckTypes(), "snmp")},
	} {
		if typeSetDiff(gained.registry, gained.config) == "" {
			t.Errorf("registry %v and config %v compare equal", gained.registry, gained.config)
		}
	}
}

// typeSetDiff says how the registry's type names and config's differ as sets; "" when they do
// not.
func typeSetDiff(registry, configured []string) string {
	var diff []string
	for _, typ := range registry {
		if !slices.Contains(configured, typ) {
			diff = append(diff, fmt.Sprintf("type %q has a prober, but config.CheckTypes lacks it", typ))
		}
	}
	for _, typ := range configured {
		if !slices.Contains(registry, typ) {
			diff = append(diff, fmt.Sprintf("config.CheckTypes has type %q, which has no prober", typ))
		}
	}
	return strings.Join(diff, "; ")
}
