package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// GeoCandidate is one backend of a record, for one address family, as the geo modes see it.
// Its index in the slice given to PrepareGeo is the index Select returns.
type GeoCandidate struct {
	// Healthy is true when the backend is healthy and enabled. The others are given too, so
	// that Explain can tell why they were passed over.
	Healthy  bool
	Priority int // lower is better
	// Weight and Share are as in Candidate. When the Weights of a table's candidates differ
	// (0 or less counting as 1), a group of several answers with one of them, at random in
	// proportion to Weight/Share, as weighted chooses.
	Weight, Share int
	// The backend's geographic fields, as in config.Backend. Empty strings and ASN 0 are unset.
	Country, Subdivision, City, Continent, Location string
	ASN                                             uint32
	Lat, Lon                                        float64
	HasCoords                                       bool
}

// GeoTable is one record's candidates for one address family, prepared for a geo mode. Build
// it with PrepareGeo when health or configuration changes; Select reads it without locking.
type GeoTable struct {
	mode  config.Mode
	cands []prepared
	// healthy counts the healthy candidates; best are those of the best priority, in order.
	healthy int
	best    []int
	// constant is set when the answer cannot depend on the client: it is always best.
	constant bool
	// has holds the fields set by at least one healthy candidate.
	has fields
	// weighted is set when the candidates' weights differ: a step's group answers with one.
	weighted bool
}

// prepared is a candidate with what the distance computation needs.
type prepared struct {
	GeoCandidate
	latRad, lonRad, cosLat float64
	// site numbers the distinct coordinates: candidates at the same place share it.
	site int
	// weight is the candidate's weight as weighted mode scales it.
	weight uint64
}

// fields is a set of candidate fields.
type fields uint8

const (
	hasCity fields = 1 << iota
	hasSubdivision
	hasCountry
	hasContinent
	hasASN
	hasLocation
	hasCoords

	hasGeo = hasCity | hasSubdivision | hasCountry | hasContinent
)

const degToRad = math.Pi / 180

// PrepareGeo builds the table of mode, config.ModeGeoIP or config.ModeGeoIPAffinity, over cands.
// It panics for any other mode.
func PrepareGeo(mode config.Mode, cands []GeoCandidate) *GeoTable {
	if mode != config.ModeGeoIP && mode != config.ModeGeoIPAffinity {
		panic(fmt.Sprintf("policy.PrepareGeo: mode %q is not a geo mode", mode))
	}
	t := &GeoTable{mode: mode, cands: make([]prepared, len(cands))}
	sites := map[[2]float64]int{}
	var first *prepared
	t.constant = true
	for i, c := range cands {
		p := &t.cands[i]
		p.GeoCandidate = c
		p.weight = scaledWeight(c.Weight, c.Share)
		t.weighted = t.weighted || max(c.Weight, 1) != max(cands[0].Weight, 1)
		if c.HasCoords {
			p.latRad, p.lonRad = c.Lat*degToRad, c.Lon*degToRad
			p.cosLat = math.Cos(p.latRad)
			key := [2]float64{c.Lat, c.Lon}
			if _, ok := sites[key]; !ok {
				sites[key] = len(sites)
			}
			p.site = sites[key]
		}
		if !c.Healthy {
			continue
		}
		t.healthy++
		t.has |= p.fields()
		if first == nil {
			first = p
		} else if !t.same(first, p) {
			t.constant = false
		}
		switch {
		case len(t.best) == 0 || c.Priority < cands[t.best[0]].Priority:
			t.best = append(t.best[:0], i)
		case c.Priority == cands[t.best[0]].Priority:
			t.best = append(t.best, i)
		}
	}
	if mode == config.ModeGeoIP && t.has&hasASN != 0 {
		// The ASN step answers with one candidate of a group that would otherwise answer whole.
		t.constant = t.healthy <= 1
	}
	return t
}

// fields returns the fields the candidate sets.
func (c *prepared) fields() fields {
	var f fields
	set := func(ok bool, bit fields) {
		if ok {
			f |= bit
		}
	}
	set(c.City != "", hasCity)
	set(c.Subdivision != "", hasSubdivision)
	set(c.Country != "", hasCountry)
	set(c.Continent != "", hasContinent)
	set(c.ASN != 0, hasASN)
	set(c.Location != "", hasLocation)
	set(c.HasCoords, hasCoords)
	return f
}

// same reports whether two candidates are alike in everything the table's mode reads, so that
// no step can tell them apart.
func (t *GeoTable) same(a, b *prepared) bool {
	return a.Priority == b.Priority && a.HasCoords == b.HasCoords && (!a.HasCoords || a.site == b.site) &&
		strings.EqualFold(a.City, b.City) && strings.EqualFold(a.Subdivision, b.Subdivision) &&
		strings.EqualFold(a.Country, b.Country) && strings.EqualFold(a.Continent, b.Continent) &&
		strings.EqualFold(a.Location, b.Location)
}

// Select appends to dst the indexes of the candidates chosen for the client described by loc,
// which src.Lookup filled, and returns dst with the EDNS Client Subnet scope of the answer: the
// longest prefix length among the source networks the decision read, 0 when the answer does
// not depend on the client. It appends nothing when no candidate is healthy. It does not
// allocate beyond growing dst, and lets neither loc nor dst's array escape: both can live on
// the caller's stack.
func (t *GeoTable) Select(src *geo.Sources, loc *geo.Location, dst []int) (out []int, scope int) {
	r := run{t: t, src: src, loc: *loc}
	return r.run(dst), r.scope
}

// run is the state of one selection. Select and Explain share it; tr is nil for Select.
//
// It holds a copy of the client's Location, and not the answer being built, which the methods
// take and return; the tracer reads the Location it prints through its own pointer. So nothing
// the tracer keeps comes from the run, and Select lets no argument escape: its caller's
// Location and dst's array can stay on the caller's stack.
type run struct {
	t     *GeoTable
	src   *geo.Sources
	loc   geo.Location
	scope int
	// group is the level geoip_affinity narrowed to (stageAll for none), for the explanation.
	group stage
	tr    *tracer
}

// run appends the selection to dst and returns it.
func (r *run) run(dst []int) []int {
	start := len(dst)
	return r.weigh(r.choose(dst), start)
}

// weigh keeps one of the candidates chosen at dst[start:], at random in proportion to weight,
// when the table is weighted and there are several.
func (r *run) weigh(dst []int, start int) []int {
	group := dst[start:]
	if !r.t.weighted || len(group) < 2 {
		return dst
	}
	var sum uint64
	for _, i := range group {
		sum += r.t.cands[i].weight
	}
	x, chosen := rand.Uint64N(sum), group[len(group)-1]
	for _, i := range group {
		if w := r.t.cands[i].weight; x >= w {
			x -= w
		} else {
			chosen = i
			break
		}
	}
	dst = append(dst[:start], chosen)
	r.record(stageWeight, srcNone, dst[start:], "one of the group, at random in proportion to weight")
	return dst
}

// choose appends the candidates of the step that decides to dst and returns it.
func (r *run) choose(dst []int) []int {
	t := r.t
	switch {
	case t.healthy == 0:
		r.record(stageHealth, srcNone, nil, "no healthy candidate: the record's fallback policy applies")
	case t.constant:
		start := len(dst)
		dst = append(dst, t.best...)
		r.record(stageSame, srcNone, dst[start:], "the healthy candidates are alike to this mode: the answer does not depend on the client")
	case t.mode == config.ModeGeoIPAffinity:
		dst = r.affinity(dst)
	default:
		dst = r.geoip(dst)
	}
	return dst
}

// geoip selects in the order of the geoip mode, appending to dst.
func (r *run) geoip(dst []int) []int {
	loc := &r.loc
	var ok bool
	var f filter
	if r.consult(stageNearest, geo.SourceCity, hasCoords) {
		if c := &loc.City; c.Found && c.HasCoords {
			if dst, ok = r.nearest(all, c.Lat, c.Lon, dst); ok {
				return dst
			}
		} else {
			r.record(stageNearest, geo.SourceCity, nil, "no coordinates for the client")
		}
	}
	if r.consult(stageHierarchy, geo.SourceCity, hasGeo) {
		if dst, f = r.hierarchy(geo.SourceCity, matchAll, dst); f.stage != stageAll {
			return dst
		}
	}
	if r.consult(stageHierarchy, geo.SourceCountry, hasCountry|hasContinent) {
		if dst, f = r.hierarchy(geo.SourceCountry, matchAll, dst); f.stage != stageAll {
			return dst
		}
	}
	if r.consult(stageASN, geo.SourceASN, hasASN) {
		if !loc.ASN.Found {
			r.record(stageASN, geo.SourceASN, nil, "the client's network is not in the database")
		} else if dst, ok = r.level(filter{stageASN, clientGeo{asn: loc.ASN.Number}}, geo.SourceASN, matchFirst, dst); ok {
			return dst
		}
	}
	if r.consult(stageLocation, geo.SourceMap, hasLocation) {
		if !loc.Map.Found {
			r.record(stageLocation, geo.SourceMap, nil, "the client is in no subnet of the map")
		} else if dst, ok = r.level(filter{stageLocation, clientGeo{location: loc.Map.Location}}, geo.SourceMap, matchAll, dst); ok {
			return dst
		}
	}
	return r.failover(all, dst)
}

// affinity selects in the order of the geoip_affinity mode, appending to dst: narrow to the
// most specific group that has a healthy candidate, pick the nearest (else the best priority)
// within it, and fall back to the nearest, then the best priority, of all.
func (r *run) affinity(dst []int) []int {
	loc := &r.loc
	group := all
	if r.consult(stageLocation, geo.SourceMap, hasLocation) {
		if loc.Map.Found {
			f := filter{stageLocation, clientGeo{location: loc.Map.Location}}
			var ok bool
			if dst, ok = r.level(f, geo.SourceMap, matchNone, dst); ok {
				group = f
			}
		} else {
			r.record(stageLocation, geo.SourceMap, nil, "the client is in no subnet of the map")
		}
	}
	if group.stage == stageAll && r.consult(stageHierarchy, geo.SourceCity, hasGeo) {
		dst, group = r.hierarchy(geo.SourceCity, matchNone, dst)
	}
	if group.stage == stageAll && r.consult(stageHierarchy, geo.SourceCountry, hasCountry|hasContinent) {
		dst, group = r.hierarchy(geo.SourceCountry, matchNone, dst)
	}
	r.group = group.stage
	dst, ok := r.nearestIn(group, dst)
	if ok {
		return dst
	}
	return r.failover(group, dst)
}

// nearestIn appends to dst the nearest healthy candidates of the group f when the client and
// some of them have coordinates, and reports whether it did. It reads the city database only
// when the answer can depend on it.
func (r *run) nearestIn(f filter, dst []int) ([]int, bool) {
	site, coords, plain := -1, 0, 0
	for i := range r.t.cands {
		c := &r.t.cands[i]
		switch {
		case !c.Healthy || !f.matches(c):
		case !c.HasCoords:
			plain++
		case coords == 0 || c.site == site:
			site, coords = c.site, coords+1
		default:
			site, coords = -2, coords+1
		}
	}
	switch {
	case coords == 0:
		r.record(stageNearest, srcNone, nil, "no healthy candidate has coordinates")
		return dst, false
	case plain == 0 && site >= 0:
		// One site: the nearest is the best priority there, as without coordinates.
		r.record(stageNearest, srcNone, nil, "the healthy candidates are all at one site")
		return dst, false
	case !r.consult(stageNearest, geo.SourceCity, hasCoords):
		return dst, false
	}
	if c := &r.loc.City; c.Found && c.HasCoords {
		return r.nearest(f, c.Lat, c.Lon, dst)
	}
	r.record(stageNearest, geo.SourceCity, nil, "no coordinates for the client")
	return dst, false
}

// The levels of the hierarchy of each database, most specific first.
var (
	cityLevels    = [...]stage{stageCity, stageSubdivision, stageCountry, stageContinent}
	countryLevels = [...]stage{stageCountry, stageContinent}
)

// hierarchy walks the levels of source (city, subdivision, country, continent for the city
// database; country, continent for the country database) and returns the first level that has
// a healthy candidate, having handled its candidates as how says (appending to dst as level
// does); it returns the filter of all candidates, and dst unchanged, when no level has one.
func (r *run) hierarchy(source geo.Source, how matchHow, dst []int) ([]int, filter) {
	var g clientGeo
	var m *geo.Match
	stages := countryLevels[:]
	if source == geo.SourceCity {
		c := &r.loc.City
		g, m = clientGeo{city: c.Name, subdivision: c.Subdivision, country: c.Country, continent: c.Continent}, &c.Match
		stages = cityLevels[:]
	} else {
		c := &r.loc.Country
		g, m = clientGeo{country: c.Country, continent: c.Continent}, &c.Match
	}
	if !m.Found {
		r.record(stageHierarchy, source, nil, "the client's network is not in the database")
		return dst, all
	}
	for _, st := range stages {
		f := filter{st, g}
		var ok bool
		if dst, ok = r.level(f, source, how, dst); ok {
			return dst, f
		}
	}
	return dst, all
}

// consult reports whether the step of source is to run: the source is configured and some
// healthy candidate sets one of need. The step reads the source, so its network bounds the
// scope.
func (r *run) consult(st stage, source geo.Source, need fields) bool {
	switch {
	case !r.src.Has(source):
		r.record(st, source, nil, "not configured")
		return false
	case r.t.has&need == 0:
		r.record(st, source, nil, "no healthy candidate sets the fields this step compares")
		return false
	}
	r.scope = max(r.scope, r.loc.MatchOf(source).Bits)
	r.read(source)
	return true
}

// matchHow says what level does with the healthy candidates of a level.
type matchHow uint8

const (
	matchAll   matchHow = iota // answer with all of them
	matchFirst                 // answer with the first of them
	matchNone                  // answer with none: only report whether there is one
)

// level handles the candidates that match f, as how says, appending to dst those it answers
// with, and reports whether any of them is healthy.
func (r *run) level(f filter, source geo.Source, how matchHow, dst []int) ([]int, bool) {
	start, found := len(dst), false
	for i := range r.t.cands {
		c := &r.t.cands[i]
		switch {
		case !f.matches(c), how == matchFirst && found:
		case !c.Healthy:
			r.skip(i)
		default:
			found = true
			if how != matchNone || r.tracing() {
				dst = append(dst, i)
			}
		}
	}
	switch {
	case !found:
		r.record(f.stage, source, nil, "no healthy candidate matches")
	case how == matchNone:
		r.record(f.stage, source, dst[start:], "narrowed to these candidates")
		dst = dst[:start]
	default:
		r.record(f.stage, source, dst[start:], "")
	}
	return dst, found
}

// nearest appends to dst the healthy candidates of f nearest to (lat, lon): those at the
// nearest site with the best priority there. Ties between sites at the same distance go to the
// better priority, then to the lower index. It reports whether f has a healthy candidate with
// coordinates.
func (r *run) nearest(f filter, lat, lon float64, dst []int) ([]int, bool) {
	lat1, lon1 := lat*degToRad, lon*degToRad
	cos1 := math.Cos(lat1)
	best, bestHav := -1, 0.0
	for i := range r.t.cands {
		c := &r.t.cands[i]
		if !c.HasCoords || !f.matches(c) {
			continue
		}
		if !c.Healthy {
			r.skip(i)
			continue
		}
		h := haversine(lat1, lon1, cos1, c)
		if best < 0 || h < bestHav || h == bestHav && c.Priority < r.t.cands[best].Priority {
			best, bestHav = i, h
		}
	}
	if best < 0 {
		r.record(stageNearest, geo.SourceCity, nil, "no healthy candidate has coordinates")
		return dst, false
	}
	start, b := len(dst), &r.t.cands[best]
	for i := range r.t.cands {
		c := &r.t.cands[i]
		if c.Healthy && c.HasCoords && c.site == b.site && c.Priority == b.Priority && f.matches(c) {
			dst = append(dst, i)
		}
	}
	if r.tracing() {
		r.record(stageNearest, geo.SourceCity, dst[start:], fmt.Sprintf("%.0f km away", earthRadiusKm*2*math.Asin(math.Sqrt(bestHav))))
	}
	return dst, true
}

// failover appends to dst the healthy candidates of f that have the best priority among them.
func (r *run) failover(f filter, dst []int) []int {
	start := len(dst)
	if f.stage == stageAll {
		dst = append(dst, r.t.best...)
	} else {
		bestPrio, found := 0, false
		for i := range r.t.cands {
			if c := &r.t.cands[i]; c.Healthy && f.matches(c) && (!found || c.Priority < bestPrio) {
				bestPrio, found = c.Priority, true
			}
		}
		for i := range r.t.cands {
			if c := &r.t.cands[i]; c.Healthy && c.Priority == bestPrio && f.matches(c) {
				dst = append(dst, i)
			}
		}
	}
	r.record(stageFailover, srcNone, dst[start:], "")
	return dst
}

const earthRadiusKm = 6371.0

// haversine returns the haversine of the central angle between the client (lat1, lon1 in
// radians, cos1 the cosine of lat1) and c. It grows with the great-circle distance, which is
// 2R·asin(√h).
func haversine(lat1, lon1, cos1 float64, c *prepared) float64 {
	sLat := math.Sin((c.latRad - lat1) / 2)
	sLon := math.Sin((c.lonRad - lon1) / 2)
	return sLat*sLat + cos1*c.cosLat*sLon*sLon
}

// clientGeo is the client's place as one source sees it.
type clientGeo struct {
	city, subdivision, country, continent, location string
	asn                                             uint32
}

// filter selects the candidates of one level for a client; stage stageAll selects all.
type filter struct {
	stage stage
	geo   clientGeo
}

var all = filter{stage: stageAll}

// matches reports whether c belongs to the level. A city matches only where the candidate's
// country and subdivision, when set, agree with the client's, and a subdivision only where its
// country does: the names and codes are not unique across countries.
func (f filter) matches(c *prepared) bool {
	g := &f.geo
	switch f.stage {
	case stageAll:
		return true
	case stageCity:
		return c.City != "" && strings.EqualFold(c.City, g.city) &&
			(c.Subdivision == "" || strings.EqualFold(c.Subdivision, g.subdivision)) &&
			(c.Country == "" || strings.EqualFold(c.Country, g.country))
	case stageSubdivision:
		return c.Subdivision != "" && strings.EqualFold(c.Subdivision, g.subdivision) &&
			(c.Country == "" || strings.EqualFold(c.Country, g.country))
	case stageCountry:
		return c.Country != "" && strings.EqualFold(c.Country, g.country)
	case stageContinent:
		return c.Continent != "" && strings.EqualFold(c.Continent, g.continent)
	case stageASN:
		return c.ASN != 0 && c.ASN == g.asn
	case stageLocation:
		return c.Location != "" && strings.EqualFold(c.Location, g.location)
	}
	return false
}
