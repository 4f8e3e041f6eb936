package policy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// srcNone marks a step that reads no source.
const srcNone geo.Source = 0

// stage is one step of a mode.
type stage uint8

const (
	stageAll       stage = iota // no narrowing: every candidate
	stageHealth                 // nothing is healthy
	stageSame                   // the answer does not depend on the client
	stageNearest                // distance by coordinates
	stageHierarchy              // a database's place, before its levels
	stageCity
	stageSubdivision
	stageCountry
	stageContinent
	stageASN
	stageLocation // the location map
	stageFailover
	stageWeight // one of the group by weight
)

var stageNames = [...]string{
	stageAll: "all", stageHealth: "health", stageSame: "same answer", stageNearest: "nearest",
	stageHierarchy: "lookup", stageCity: "city", stageSubdivision: "subdivision", stageCountry: "country",
	stageContinent: "continent", stageASN: "asn", stageLocation: "location", stageFailover: "failover",
	stageWeight: "weight",
}

// String returns the stage's name as explanations print it.
func (s stage) String() string { return stageNames[s] }

// GeoExplanation is how a GeoTable selected for one client, step by step.
type GeoExplanation struct {
	Mode   config.Mode
	Client netip.Addr
	// Picks and Scope are what Select returns.
	Picks []int
	Scope int
	// Steps are the steps taken, in order; the last one decided.
	Steps []GeoStep
}

// GeoStep is one step of a selection.
type GeoStep struct {
	// Stage is the step: "nearest", "city", "subdivision", "country", "continent", "asn",
	// "location", "failover", "weight" (one of the group by weight); "lookup" for a database as
	// a whole; "health" when no candidate is healthy; "same answer" when the healthy candidates
	// cannot be told apart.
	Stage string
	// Source is the data source read ("city database", ...), empty for none.
	Source string
	// Network is the source's network that holds the client, when the step read a source; its
	// length counts toward the scope.
	Network netip.Prefix
	// Value is the client's value the step compared, such as "San Jose", "US", "AS64500",
	// "eu-west" or "37.3382,-121.8863".
	Value string
	// Group is, for geoip_affinity's nearest and failover steps, the level the candidates were
	// narrowed to ("location", "city", ..., or "all").
	Group string
	// Matched are the healthy candidates the step matched; those of the last step are the answer.
	Matched []int
	// Skipped are the candidates the step passed over.
	Skipped []GeoSkip
	// Note says why the step did not decide, or adds a detail.
	Note string
}

// GeoSkip is a candidate a step passed over.
type GeoSkip struct {
	Index  int
	Reason string
}

// Explain returns how Select chooses for loc, with every step. It allocates; it is meant for
// the admin API and debugging, not for queries.
func (t *GeoTable) Explain(src *geo.Sources, loc *geo.Location) GeoExplanation {
	r := run{t: t, src: src, loc: *loc, tr: &tracer{loc: loc}}
	picks := r.run(nil)
	return GeoExplanation{Mode: t.mode, Client: loc.Addr, Picks: picks, Scope: r.scope, Steps: r.tr.steps}
}

// String prints the explanation, one step per line.
func (e GeoExplanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s for %s: %v, scope /%d", e.Mode, e.Client, e.Picks, e.Scope)
	for _, s := range e.Steps {
		b.WriteString("\n  " + s.Stage)
		var in []string
		if s.Source != "" {
			in = append(in, s.Source)
		}
		if s.Network.IsValid() {
			in = append(in, s.Network.String())
		}
		if s.Group != "" {
			in = append(in, "within "+s.Group)
		}
		if len(in) > 0 {
			b.WriteString(" (" + strings.Join(in, ", ") + ")")
		}
		if s.Value != "" {
			fmt.Fprintf(&b, " %q", s.Value)
		}
		var out []string
		if len(s.Matched) > 0 {
			out = append(out, fmt.Sprintf("matched %v", s.Matched))
		}
		for _, k := range s.Skipped {
			out = append(out, fmt.Sprintf("skipped %d: %s", k.Index, k.Reason))
		}
		if s.Note != "" {
			out = append(out, s.Note)
		}
		if len(out) > 0 {
			b.WriteString(": " + strings.Join(out, "; "))
		}
	}
	return b.String()
}

// tracer collects the steps of an explained selection.
type tracer struct {
	// loc is the client, for what the steps print. They read it here and not in the run, whose
	// contents would otherwise all leak to the heap: Select's src and t with them.
	loc   *geo.Location
	steps []GeoStep
	// skipped collects the candidates passed over by the step in progress.
	skipped []GeoSkip
	// read holds the sources read so far.
	read [geo.SourceMap + 1]bool
}

// tracing reports whether the run is explained.
func (r *run) tracing() bool { return r.tr != nil }

// skip notes that the step in progress passed over candidate i, which is not healthy.
func (r *run) skip(i int) {
	if r.tr != nil {
		r.tr.skipped = append(r.tr.skipped, GeoSkip{Index: i, Reason: "not healthy, or disabled"})
	}
}

// read notes that the run read source.
func (r *run) read(source geo.Source) {
	if r.tr != nil {
		r.tr.read[source] = true
	}
}

// record ends a step of stage that read source, which matched the candidates in matched. It
// keeps a copy of matched.
func (r *run) record(st stage, source geo.Source, matched []int, note string) {
	tr := r.tr
	if tr == nil {
		return
	}
	s := GeoStep{Stage: st.String(), Source: source.String(), Note: note, Skipped: tr.skipped}
	tr.skipped = nil
	if len(matched) > 0 {
		s.Matched = append([]int(nil), matched...)
	}
	if tr.read[source] {
		m := tr.loc.MatchOf(source)
		s.Network = netip.PrefixFrom(tr.loc.Addr, m.Bits).Masked()
		if m.Err != nil {
			s.Note = strings.TrimPrefix(s.Note+"; lookup failed: "+m.Err.Error(), "; ")
		}
	}
	s.Value = r.value(st, source)
	if r.t.mode == config.ModeGeoIPAffinity && (st == stageNearest || st == stageFailover) {
		s.Group = r.group.String()
	}
	tr.steps = append(tr.steps, s)
}

// value returns the client's value that stage compares, as read from source.
func (r *run) value(st stage, source geo.Source) string {
	loc := r.tr.loc
	switch {
	case source == srcNone || !r.tr.read[source]:
		return ""
	case st == stageNearest && loc.City.HasCoords:
		return fmt.Sprintf("%.4f,%.4f", loc.City.Lat, loc.City.Lon)
	case st == stageCity:
		return loc.City.Name
	case st == stageSubdivision:
		return loc.City.Subdivision
	case st == stageCountry && source == geo.SourceCity:
		return loc.City.Country
	case st == stageCountry:
		return loc.Country.Country
	case st == stageContinent && source == geo.SourceCity:
		return loc.City.Continent
	case st == stageContinent:
		return loc.Country.Continent
	case st == stageASN && loc.ASN.Found:
		return fmt.Sprintf("AS%d", loc.ASN.Number)
	case st == stageLocation && loc.Map.Found:
		return loc.Map.Location + " (" + loc.Map.Subnet.String() + ")"
	}
	return ""
}
