// Package geo holds the data sources of the geoip and geoip_affinity modes: it reads MaxMind
// databases (City, Country, ASN) and the subnet -> location map of geoip_custom, and describes a
// client address as a Location. Package policy selects a record's backends for that Location.
//
// A query does one Lookup, which fills a caller-owned Location without allocating once the
// client's database records are cached. Sources are immutable; a Store swaps in new ones when
// the files change.
package geo

import "net/netip"

// Location is what the data sources say about one client address. Lookup fills it; the zero
// value means that no source knows the client.
type Location struct {
	// Addr is the address given to Lookup.
	Addr netip.Addr
	// City is the answer of the city database.
	City CityInfo
	// Country is the answer of the country database.
	Country CountryInfo
	// ASN is the answer of the ASN database.
	ASN ASNInfo
	// Map is the answer of the location map (geoip_custom).
	Map MapInfo
}

// Match is the outcome of one source's lookup.
type Match struct {
	// Found reports that the source holds data for the client's network.
	Found bool
	// Bits is the prefix length of the network the lookup landed in, whether or not that network
	// holds data: every address in it gets the same answer from this source. It counts in the
	// family of the address given to Lookup, so an IPv4-mapped IPv6 client has 96 added.
	Bits int
	// Err is set when the source's data for the network could not be read; Found is false then.
	Err error
}

// CityInfo is the client's entry in a GeoIP2/GeoLite2 City database.
type CityInfo struct {
	Match
	Name        string // city.names.en
	Subdivision string // subdivisions[0].iso_code
	Country     string // country.iso_code
	Continent   string // continent.code
	// Lat and Lon are location.latitude and location.longitude, valid when HasCoords.
	Lat, Lon  float64
	HasCoords bool
}

// CountryInfo is the client's entry in a GeoIP2/GeoLite2 Country database.
type CountryInfo struct {
	Match
	Country   string // country.iso_code
	Continent string // continent.code
}

// ASNInfo is the client's entry in a GeoLite2 ASN database.
type ASNInfo struct {
	Match
	Number uint32 // autonomous_system_number
}

// MapInfo is the client's entry in the location map.
type MapInfo struct {
	Match
	// Subnet is the longest subnet of the map that holds the client, valid when Found.
	Subnet   netip.Prefix
	Location string
}

// Source names one data source of the geo modes.
type Source uint8

// The data sources. The zero Source is none.
const (
	SourceCity    Source = iota + 1 // geoip_maxmind city_db
	SourceCountry                   // geoip_maxmind country_db
	SourceASN                       // geoip_maxmind asn_db
	SourceMap                       // geoip_custom
)

// String returns the source's name as explanations print it.
func (s Source) String() string {
	switch s {
	case SourceCity:
		return "city database"
	case SourceCountry:
		return "country database"
	case SourceASN:
		return "ASN database"
	case SourceMap:
		return "location map"
	}
	return ""
}

// MatchOf returns the lookup outcome of source; that of the location map for any other value.
func (loc *Location) MatchOf(source Source) *Match {
	switch source {
	case SourceCity:
		return &loc.City.Match
	case SourceCountry:
		return &loc.Country.Match
	case SourceASN:
		return &loc.ASN.Match
	default:
		return &loc.Map.Match
	}
}
