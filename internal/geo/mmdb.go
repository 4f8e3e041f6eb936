package geo

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oschwald/maxminddb-golang/v2"
)

// maxCachedRecords bounds the decoded records kept per database. GeoIP2/GeoLite2 databases hold
// in the order of 100,000 distinct records, so in practice every record a client hits is cached;
// past the bound, a record not yet cached is decoded on each lookup (correct, but allocating).
const maxCachedRecords = 1 << 18

// database is one open MaxMind database with a cache of decoded records. T is the immutable
// record kept in the cache.
type database[T any] struct {
	path   string
	reader *maxminddb.Reader
	decode func(maxminddb.Result) (T, error)
	// cache maps a record's data offset (Result.Offset) to its *entry[T]. Reads do not lock.
	cache  sync.Map
	cached atomic.Int64
}

// entry is one cached record, or the error met decoding it.
type entry[T any] struct {
	rec T
	err error
}

// openDB opens a database and checks that its type is one of kinds (compared without case,
// as substrings of the metadata's database_type).
func openDB[T any](option, path string, kinds []string, decode func(maxminddb.Result) (T, error)) (*database[T], error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("geoip_maxmind %s %s: %w", option, path, err)
	}
	typ := strings.ToLower(r.Metadata.DatabaseType)
	for _, k := range kinds {
		if strings.Contains(typ, strings.ToLower(k)) {
			return &database[T]{path: path, reader: r, decode: decode}, nil
		}
	}
	err = fmt.Errorf("geoip_maxmind %s %s: database type %q is not one of %s", option, path,
		r.Metadata.DatabaseType, strings.Join(kinds, ", "))
	r.Close()
	return nil, err
}

// lookup returns the record of ip's network (nil when the database has none) and the network's
// prefix length. ip is unmapped; a database that cannot hold ip's family answers "none" for the
// whole family (length 0).
func (d *database[T]) lookup(ip netip.Addr) (*T, int, error) {
	if ip.Is6() && d.reader.Metadata.IPVersion == 4 {
		return nil, 0, nil
	}
	res := d.reader.Lookup(ip)
	bits := 0
	if p := res.Prefix(); p.Addr().Is4() == ip.Is4() {
		// An IPv4 address that ended above the IPv4 subtree gets an IPv6 prefix: the answer
		// holds for every IPv4 address.
		bits = p.Bits()
	}
	if err := res.Err(); err != nil {
		return nil, bits, fmt.Errorf("%s: %w", d.path, err)
	}
	if !res.Found() {
		return nil, bits, nil
	}
	off := res.Offset()
	if v, ok := d.cache.Load(off); ok {
		e := v.(*entry[T])
		return &e.rec, bits, e.err
	}
	rec, err := d.decode(res)
	if err != nil {
		err = fmt.Errorf("%s: %w", d.path, err)
	}
	e := &entry[T]{rec: rec, err: err}
	if d.cached.Load() < maxCachedRecords {
		if v, loaded := d.cache.LoadOrStore(off, e); loaded {
			e = v.(*entry[T])
		} else {
			d.cached.Add(1)
		}
	}
	return &e.rec, bits, e.err
}

// cityRecord is the part of a City database record that the modes read.
type cityRecord struct {
	name, subdivision, country, continent string
	lat, lon                              float64
	hasCoords                             bool
}

// countryRecord is the part of a Country database record that the modes read.
type countryRecord struct {
	country, continent string
}

// asnRecord is the part of an ASN database record that the modes read.
type asnRecord struct {
	asn uint32
}

// mmdbCity is the GeoIP2/GeoLite2 City layout, as far as it is read.
type mmdbCity struct {
	City struct {
		Names struct {
			En string `maxminddb:"en"`
		} `maxminddb:"names"`
	} `maxminddb:"city"`
	Subdivisions []struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"subdivisions"`
	mmdbCountry
	Location struct {
		Latitude  *float64 `maxminddb:"latitude"`
		Longitude *float64 `maxminddb:"longitude"`
	} `maxminddb:"location"`
}

// mmdbCountry is the GeoIP2/GeoLite2 Country layout, as far as it is read.
type mmdbCountry struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	Continent struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"continent"`
}

func decodeCity(res maxminddb.Result) (cityRecord, error) {
	var m mmdbCity
	if err := res.Decode(&m); err != nil {
		return cityRecord{}, err
	}
	r := cityRecord{
		name:      m.City.Names.En,
		country:   strings.ToUpper(m.Country.ISOCode),
		continent: strings.ToUpper(m.Continent.Code),
	}
	if len(m.Subdivisions) > 0 {
		r.subdivision = strings.ToUpper(m.Subdivisions[0].ISOCode)
	}
	if lat, lon := m.Location.Latitude, m.Location.Longitude; lat != nil && lon != nil {
		r.lat, r.lon, r.hasCoords = *lat, *lon, true
	}
	return r, nil
}

func decodeCountry(res maxminddb.Result) (countryRecord, error) {
	var m mmdbCountry
	if err := res.Decode(&m); err != nil {
		return countryRecord{}, err
	}
	return countryRecord{country: strings.ToUpper(m.Country.ISOCode), continent: strings.ToUpper(m.Continent.Code)}, nil
}

func decodeASN(res maxminddb.Result) (asnRecord, error) {
	var m struct {
		ASN uint32 `maxminddb:"autonomous_system_number"`
	}
	if err := res.Decode(&m); err != nil {
		return asnRecord{}, err
	}
	return asnRecord{asn: m.ASN}, nil
}
