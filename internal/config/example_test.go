package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/meridian-gslb/meridian/internal/config"
)

// A zone file is loaded for one origin; names, modes and defaults come back validated.
func ExampleLoadZone() {
	dir, err := os.MkdirTemp("", "zone")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "example.org.yml")
	yaml := `
records:
  WWW.example.org:
    mode: failover
    backends:
      - {address: 192.0.2.10, priority: 1}
      - {address: 198.51.100.10, priority: 2}
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		panic(err)
	}
	z, err := config.LoadZone(config.ZoneSource{Origin: "example.org.", File: file}, nil, 0)
	if err != nil {
		panic(err)
	}
	for _, r := range z.Records {
		fmt.Println(r.Name, r.Mode, "TTL", r.TTL)
		for _, b := range r.Backends {
			fmt.Println(" ", b.Address, "priority", b.Priority, "enabled", b.Enable)
		}
	}
	// Output:
	// www.example.org. failover TTL 30
	//   192.0.2.10 priority 1 enabled true
	//   198.51.100.10 priority 2 enabled true
}

// Every error of a file is reported with its line, column and field.
func ExampleParseZone_errors() {
	yaml := `records:
  www.example.org.:
    mode: failovr
    backends:
      - {address: 192.0.2.10, port: 70000}
`
	_, err := config.ParseZone("example.org.yml", []byte(yaml), "example.org.", nil, 1)
	fmt.Println(err)
	// Output:
	// example.org.yml:3:11: records["www.example.org."].mode: unknown mode "failovr"; did you mean "failover"? (valid: failover, roundrobin, random, weighted, ip-hash, consistent-hash, geoip, geoip_affinity, chain)
	// example.org.yml:5:37: records["www.example.org."].backends[0].port: must be between 1 and 65535, not 70000
}
