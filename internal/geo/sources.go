package geo

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Sources are the open data sources of the geo modes: up to three MaxMind databases and a
// location map. They are immutable and safe for concurrent use. A nil *Sources has no source.
type Sources struct {
	opts    config.GeoIPOptions
	city    *database[cityRecord]
	country *database[countryRecord]
	asn     *database[asnRecord]
	locmap  *LocationMap
}

// Database types accepted for each option, matched without case as substrings of the
// database's type ("GeoIP2-City", "GeoLite2-ASN", "DBIP-City-Lite", ...).
var (
	cityKinds    = []string{"City", "Enterprise"}
	countryKinds = []string{"Country", "City", "Enterprise"}
	asnKinds     = []string{"ASN", "ISP"}
)

// Open opens the databases and loads the location map named in opts; empty paths are sources
// not used. The databases are memory-mapped. On error, every source that failed is reported,
// each with its option and file, and nothing stays open. A location map of more than
// config.DefaultMaxFileSize bytes is refused (NewStore takes the limit).
func Open(opts config.GeoIPOptions) (*Sources, error) {
	return open(opts, 0)
}

// open is Open with a location map of more than mapLimit bytes refused (the default when 0).
func open(opts config.GeoIPOptions, mapLimit int64) (*Sources, error) {
	s := &Sources{opts: opts}
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	if opts.CityDB != "" {
		s.city, err = openDB("city_db", opts.CityDB, cityKinds, decodeCity)
		note(err)
	}
	if opts.CountryDB != "" {
		s.country, err = openDB("country_db", opts.CountryDB, countryKinds, decodeCountry)
		note(err)
	}
	if opts.ASNDB != "" {
		s.asn, err = openDB("asn_db", opts.ASNDB, asnKinds, decodeASN)
		note(err)
	}
	if opts.CustomMap != "" {
		s.locmap, err = LoadLocationMap(opts.CustomMap, mapLimit)
		note(err)
	}
	if len(errs) > 0 {
		s.Close()
		return nil, errors.Join(errs...) // every source's errors, not only the first one's
	}
	return s, nil
}

// Close unmaps the databases at once. Use it only when no lookup can still be running on s,
// such as in tests and one-shot commands; a Store never closes the Sources it replaces.
func (s *Sources) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, d := range []interface{ close() error }{s.city, s.country, s.asn} {
		if err := d.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close closes the database's reader; it does nothing for a nil database.
func (d *database[T]) close() error {
	if d == nil {
		return nil
	}
	if err := d.reader.Close(); err != nil {
		return fmt.Errorf("close %s: %w", d.path, err)
	}
	return nil
}

// Files returns the paths of the sources, the files whose changes call for a Reload.
func (s *Sources) Files() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, f := range []string{s.opts.CityDB, s.opts.CountryDB, s.opts.ASNDB, s.opts.CustomMap} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Has reports whether source src is configured.
func (s *Sources) Has(src Source) bool {
	if s == nil {
		return false
	}
	switch src {
	case SourceCity:
		return s.city != nil
	case SourceCountry:
		return s.country != nil
	case SourceASN:
		return s.asn != nil
	case SourceMap:
		return s.locmap != nil
	}
	return false
}

// Lookup describes client in loc, overwriting it, from every configured source. An
// IPv4-mapped IPv6 address is looked up as IPv4 (prefix lengths stay in its family). Once the
// database records of the client's networks are cached, Lookup does not allocate.
func (s *Sources) Lookup(client netip.Addr, loc *Location) {
	*loc = Location{Addr: client}
	if s == nil || !client.IsValid() {
		return
	}
	ip, extra := client.WithZone(""), 0
	if ip.Is4In6() {
		ip, extra = ip.Unmap(), 96
	}
	if s.city != nil {
		rec, bits, err := s.city.lookup(ip)
		c := &loc.City
		c.Bits, c.Err = bits+extra, err
		if rec != nil && err == nil {
			c.Found = true
			c.Name, c.Subdivision, c.Country, c.Continent = rec.name, rec.subdivision, rec.country, rec.continent
			c.Lat, c.Lon, c.HasCoords = rec.lat, rec.lon, rec.hasCoords
		}
	}
	if s.country != nil {
		rec, bits, err := s.country.lookup(ip)
		c := &loc.Country
		c.Bits, c.Err = bits+extra, err
		if rec != nil && err == nil {
			c.Found, c.Country, c.Continent = true, rec.country, rec.continent
		}
	}
	if s.asn != nil {
		rec, bits, err := s.asn.lookup(ip)
		a := &loc.ASN
		a.Bits, a.Err = bits+extra, err
		if rec != nil && err == nil {
			a.Found, a.Number = true, rec.asn
		}
	}
	if s.locmap != nil {
		m := &loc.Map
		m.Subnet, m.Location, m.Bits, m.Found = s.locmap.Lookup(client.WithZone(""))
	}
}

// Store holds the current Sources of a server and replaces them when their files change.
// Queries read the current Sources without locking.
//
// Replaced Sources are never closed explicitly: a query that loaded them may still be reading
// them. They are dropped instead, and the MaxMind reader unmaps its file once the garbage
// collector finds no reference left (runtime.AddCleanup in maxminddb.Open). Decoded strings are
// copies, never pointers into the mapping, so nothing outlives it. The cost is that an old
// mapping stays until the next collection after the last query that used it.
type Store struct {
	opts     config.GeoIPOptions
	mapLimit int64
	mu       sync.Mutex // serializes Reload
	cur      atomic.Pointer[Sources]
}

// NewStore opens the sources named in opts and returns a Store holding them. A location map
// of more than mapLimit bytes (config.DefaultMaxFileSize when 0) is refused, then and at every
// Reload.
func NewStore(opts config.GeoIPOptions, mapLimit int64) (*Store, error) {
	s, err := open(opts, mapLimit)
	if err != nil {
		return nil, err
	}
	st := &Store{opts: opts, mapLimit: mapLimit}
	st.cur.Store(s)
	return st, nil
}

// Sources returns the current sources. A query should call it once and use the result for
// both its Lookup and its Selects.
func (st *Store) Sources() *Sources { return st.cur.Load() }

// Reload opens the sources again from their files and swaps them in when all of them open
// without error. On error the current sources stay in use and the error is returned.
func (st *Store) Reload() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := open(st.opts, st.mapLimit)
	if err != nil {
		return fmt.Errorf("geoip reload: %w", err)
	}
	st.cur.Store(s)
	return nil
}
