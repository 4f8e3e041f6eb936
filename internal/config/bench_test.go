package config

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseZone10k parses a zone of 10,000 records with three backends each (the reload
// budget is one second for such a zone, all stages included).
func BenchmarkParseZone10k(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("healthcheck_profiles:\n  web: {type: http, params: {port: 80, uri: /}}\nrecords:\n")
	for i := range 10000 {
		fmt.Fprintf(&sb, "  r%d.example.org.:\n    mode: weighted\n    record_ttl: 30\n    backends:\n", i)
		for j := range 3 {
			fmt.Fprintf(&sb, "      - {address: 10.%d.%d.%d, weight: %d, country: US, healthchecks: [web]}\n", i/256, i%256, j, j+1)
		}
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseZone("big.yml", data, "example.org", nil, 1); err != nil {
			b.Fatal(err)
		}
	}
}
