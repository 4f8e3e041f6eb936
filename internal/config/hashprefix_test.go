package config

import (
	"strings"
	"testing"
)

func TestConsistentHashAndMinHealthySettings(t *testing.T) {
	const be = "    backends: [{address: 10.0.0.1}]\n"
	tests := []struct {
		name, yml  string
		prefix     HashPrefix
		minHealthy int
	}{
		{"defaults", "records:\n  a.example.org:\n    mode: consistent-hash\n" + be,
			HashPrefix{V4: 24, V6: 56}, 1},
		{"both prefixes", "records:\n  a.example.org:\n    mode: consistent-hash\n    hash_prefix_v4: 32\n    hash_prefix_v6: 0\n" + be,
			HashPrefix{V4: 32, V6: 0}, 1},
		{"one prefix", "records:\n  a.example.org:\n    mode: Consistent-Hash\n    hash_prefix_v6: 48\n" + be,
			HashPrefix{V4: 24, V6: 48}, 1},
		{"prefix in defaults, for any mode", "defaults: {hash_prefix_v4: 16, min_healthy: 2}\nrecords:\n  a.example.org:\n    mode: consistent-hash\n" + be,
			HashPrefix{V4: 16, V6: 56}, 2},
		{"min_healthy", "records:\n  a.example.org:\n    min_healthy: 3\n" + be,
			HashPrefix{V4: 24, V6: 56}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := parseString(t, tc.yml).Records[0]
			eq(t, "hash prefix", r.Steering().HashPrefix, tc.prefix)
			eq(t, "min_healthy", r.Steering().MinHealthy, tc.minHealthy)
		})
	}
}

func TestConsistentHashAndMinHealthyErrors(t *testing.T) {
	const be = "    backends: [{address: 10.0.0.1}]\n"
	tests := []struct{ name, yml, want string }{
		{"v4 prefix too long", "records:\n  a.example.org:\n    mode: consistent-hash\n    hash_prefix_v4: 33\n" + be,
			`zone.yml:4:21: records["a.example.org"].hash_prefix_v4: must be between 0 and 32, not 33`},
		{"v6 prefix too long", "records:\n  a.example.org:\n    mode: consistent-hash\n    hash_prefix_v6: 129\n" + be,
			`zone.yml:4:21: records["a.example.org"].hash_prefix_v6: must be between 0 and 128, not 129`},
		{"negative prefix", "records:\n  a.example.org:\n    mode: consistent-hash\n    hash_prefix_v4: -1\n" + be,
			`records["a.example.org"].hash_prefix_v4: must be between 0 and 32, not -1`},
		{"prefix without consistent-hash", "records:\n  a.example.org:\n    mode: ip-hash\n    hash_prefix_v4: 24\n" + be,
			`zone.yml:4:21: records["a.example.org"].hash_prefix_v4: hash_prefix_v4 only applies with mode consistent-hash or chain, not ip-hash`},
		{"min_healthy 0", "records:\n  a.example.org:\n    min_healthy: 0\n" + be,
			`zone.yml:3:18: records["a.example.org"].min_healthy: must be at least 1, not 0`},
		{"min_healthy without failover", "records:\n  a.example.org:\n    mode: weighted\n    min_healthy: 2\n" + be,
			`zone.yml:4:18: records["a.example.org"].min_healthy: min_healthy only applies with mode failover or chain, not weighted`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseErr(t, tc.yml); !strings.Contains(got, tc.want) {
				t.Errorf("error:\n%s\nwant it to contain:\n%s", got, tc.want)
			}
		})
	}
}
