package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseZone checks that no input makes ParseZone panic, that a nil error always comes with a
// zone whose records are valid names inside the origin, and that an error is always an ErrorList.
func FuzzParseZone(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("records: {\"*.example.org\": {backends: [{address: a.example.org}]}}"))
	f.Add([]byte("healthcheck_profiles: {p: &a {type: http, params: {x: *a}}}"))
	shared := sharedProfiles(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		z, err := ParseZone("fuzz.yml", data, "example.org", shared, 1)
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %T is not a non-empty ErrorList: %v", err, err)
			}
			if z != nil {
				t.Fatal("zone is not nil with an error")
			}
			return
		}
		if z == nil {
			t.Fatal("nil zone without an error")
		}
		for _, r := range z.Records {
			if !inZone(r.Name, z.Origin) || checkName(r.Name, true) != nil || CanonicalName(r.Name) != r.Name {
				t.Fatalf("record %q is not a canonical name inside %s", r.Name, z.Origin)
			}
			if len(r.Backends) == 0 {
				t.Fatalf("record %q has no backends", r.Name)
			}
			for _, b := range r.Backends {
				if b.IsHost() && (checkHost(b.Address) != nil || strings.ToLower(b.Address) != b.Address) {
					t.Fatalf("record %q: backend host %q is not canonical", r.Name, b.Address)
				}
			}
		}
	})
}
