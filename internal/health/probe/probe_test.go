package probe

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestCheckKeysKeepTheirForm: a check's key is its type, target, timeout and canonical
// parameters in one form (type|host|port|timeout|parameters), which the keys of probes
// running before a reload were made of too, whatever timeouts the Compiler's checks alternate.
func TestCheckKeysKeepTheirForm(t *testing.T) {
	params := config.NewParams(map[string]any{"port": 9, "send": "ping"})
	tests := []struct {
		typ     string
		target  Target
		timeout time.Duration
	}{
		{"tcp", Target{Host: "127.0.0.1"}, time.Second},
		{"tcp", Target{Host: "127.0.0.1", Port: 8443}, time.Second},
		{"tcp", Target{Host: "2001:db8::1", Port: 65535}, 1500 * time.Millisecond},
		{"http", Target{Host: "www.example.org"}, 0},
		{"http", Target{Host: "www.example.org"}, time.Second},
	}
	c := NewCompiler()
	for range 2 {
		for _, tt := range tests {
			hc := config.HealthCheck{Type: tt.typ, Params: params}
			want := fmt.Sprintf("%s|%s|%d|%s|%s", tt.typ, tt.target.Host, tt.target.Port, tt.timeout, c.canonicalForm(params))
			if got := string(c.checkKey(hc, tt.target, tt.timeout)); got != want {
				t.Errorf("key %q, want %q", got, want)
			}
		}
	}
}
