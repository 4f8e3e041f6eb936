// Command geodb writes the City database that bench/run.sh --geo serves from: a few thousand
// /24 networks spread over four sites' countries, so that lookups walk a realistic tree.
//
// Usage: go run ./bench/geodb PATH
package main

import (
	"fmt"
	"os"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// sites are the countries of the benchmark's backends, with a city and coordinates each.
var sites = []testutil.GeoNetwork{
	{City: "San Jose", Subdivision: "CA", Country: "US", Continent: "NA", Lat: 37.33, Lon: -121.89},
	{City: "Paris", Subdivision: "IDF", Country: "FR", Continent: "EU", Lat: 48.85, Lon: 2.35},
	{City: "Tokyo", Subdivision: "13", Country: "JP", Continent: "AS", Lat: 35.68, Lon: 139.69},
	{City: "Sao Paulo", Subdivision: "SP", Country: "BR", Continent: "SA", Lat: -23.55, Lon: -46.63},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: geodb PATH")
		os.Exit(2)
	}
	var nets []testutil.GeoNetwork
	// 198.18.0.0/15 (benchmarking networks, RFC 2544): 512 /24s, round robin over the sites.
	for i := range 512 {
		n := sites[i%len(sites)]
		n.Prefix = fmt.Sprintf("198.%d.%d.0/24", 18+i/256, i%256)
		nets = append(nets, n)
	}
	if err := testutil.WriteCityDBFile(os.Args[1], nets); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
