package catalog

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"
)

// zoneBySuffixes is Snapshot.Zone's lookup by hashing: the zone of the longest suffix of qname
// on a label boundary (dns.NextLabel), else the root zone.
func zoneBySuffixes(zones map[string]*Zone, qname string) *Zone {
	for off, end := 0, false; !end; off, end = dns.NextLabel(qname, off) {
		if z, ok := zones[qname[off:]]; ok {
			return z
		}
	}
	return zones["."]
}

// TestZoneOfFewZonesMatchesSuffixLookup checks that a snapshot of few zones, which compares
// names' ends, finds the zone the lookup of every suffix finds: the longest origin on a label
// boundary, never across an escaped dot.
func TestZoneOfFewZonesMatchesSuffixLookup(t *testing.T) {
	names := []string{
		".", "test.", "example.test.", "www.example.test.", "a.b.example.test.", "xexample.test.",
		`a\.example.test.`, `a\\.example.test.`, `a\\\.example.test.`, `example\.test.`, `\.example.test.`,
		"sub.example.test.", "www.sub.example.test.", "other.", "www.other.", "example.test.other.",
		`x\046example.test.`, "b.example.test.", "tset.",
	}
	for _, origins := range [][]string{
		{"example.test."},
		{"example.test.", "sub.example.test."},
		{"sub.example.test.", "example.test.", "other."},
		{".", "example.test."},
		{"test.", "example.test.", "sub.example.test.", "."},
		{"a.", "b.", "c.", "d.", "example.test."}, // more than maxFewZones: the map
	} {
		t.Run(fmt.Sprint(origins), func(t *testing.T) {
			s := &Snapshot{zones: map[string]*Zone{}}
			for _, o := range origins {
				s.zones[o] = &Zone{Origin: o}
			}
			s.indexZones()
			if few := len(origins) <= maxFewZones; (s.fewZones != nil) != few {
				t.Fatalf("fewZones set: %v, want %v", s.fewZones != nil, few)
			}
			for _, q := range names {
				if got, want := s.Zone(q), zoneBySuffixes(s.zones, q); got != want {
					t.Errorf("Zone(%q) = %v, want %v", q, origin(got), origin(want))
				}
			}
		})
	}
}

// origin is z's origin, "none" for nil.
func origin(z *Zone) string {
	if z == nil {
		return "none"
	}
	return z.Origin
}

// FuzzZoneOf checks Snapshot.Zone's comparison of names' ends against the lookup of every
// suffix, for any query name and up to maxFewZones origins made of its labels and others.
func FuzzZoneOf(f *testing.F) {
	f.Add(`a\.example.test.`, "example.test.", "test.")
	f.Add(`a\\.example.test.`, "example.test.", ".")
	f.Add("www.sub.example.test.", "sub.example.test.", "example.test.")
	f.Fuzz(func(t *testing.T, qname, o1, o2 string) {
		s := &Snapshot{zones: map[string]*Zone{}}
		for _, o := range []string{o1, o2} {
			if o != "" && o[len(o)-1] == '.' {
				s.zones[o] = &Zone{Origin: o}
			}
		}
		s.indexZones()
		if got, want := s.Zone(qname), zoneBySuffixes(s.zones, qname); got != want {
			t.Errorf("Zone(%q) with %q, %q = %v, want %v", qname, o1, o2, origin(got), origin(want))
		}
	})
}
